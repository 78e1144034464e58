package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/catalogd/catalogd/api/catalogapi"
	"github.com/catalogd/catalogd/internal/graphqlapi"
	"github.com/catalogd/catalogd/internal/store"
)

// The GraphQL endpoint takes catalogd's request, a JSON object whose query
// is the GraphQL text, at most maxGraphQLBody bytes of body and
// maxGraphQLQuery of query as catalogd takes them, and answers its
// envelope ({"data": ..., "errors": [...]}) with 200 whatever the query's
// fate, as GraphQL over HTTP does; a request that is no GraphQL request
// at all is a 400 problem. graphqlapi does the rest.
const (
	graphqlPath     = "/api/v1/graphql"
	maxGraphQLBody  = 1 << 20
	maxGraphQLQuery = 100000
)

func (s *Server) serveGraphQL(w http.ResponseWriter, r *http.Request, snap *store.Snapshot) error {
	var req catalogapi.GraphQLRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxGraphQLBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return &problem{status: http.StatusRequestEntityTooLarge, typ: "invalid-parameter", param: "body",
			detail: fmt.Sprintf("the request body is over %d bytes", maxGraphQLBody)}
	case err != nil:
		return badParam("body", "read the request body: %v", err)
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return badParam("body", "the request body is not a GraphQL request ({\"query\": \"...\"}): %v", err)
	}
	if req.Query == "" {
		return badParam("query", "the query is empty")
	}
	if len(req.Query) > maxGraphQLQuery {
		return badParam("query", "the query is %d bytes, over the %d allowed", len(req.Query), maxGraphQLQuery)
	}
	gr := graphqlapi.Request{Query: req.Query, Variables: req.Variables, OperationName: req.OperationName}
	res := s.graphql.Execute(r.Context(), graphqlapi.Index{Catalog: pathParam(r, "catalog"), Path: snap.Info.Path, Reader: snap.Catalog}, gr)
	out, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encode GraphQL answer: %w", err)
	}
	out = append(out, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	_, err = w.Write(out)
	return abortOnError(err)
}
