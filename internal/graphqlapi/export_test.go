package graphqlapi

import (
	"context"

	"github.com/graphql-go/graphql"
)

// ExecuteGraphQLGo answers req through graphql-go alone, never fast.go,
// for tests that compare the two.
func (s *Service) ExecuteGraphQLGo(ctx context.Context, idx Index, req Request) *graphql.Result {
	return s.execute(ctx, idx, req, false)
}

// AnsweredPlain says whether fast.go answers req itself.
func (s *Service) AnsweredPlain(ctx context.Context, idx Index, req Request) bool {
	doc, err := parse(req.Query)
	if err != nil {
		return false
	}
	b, err := s.schema(ctx, idx)
	if err != nil {
		return false
	}
	_, ok := (&run{ctx: ctx, cat: idx.Reader, limits: s.limits}).plainQuery(ctx, b, doc, req)
	return ok
}
