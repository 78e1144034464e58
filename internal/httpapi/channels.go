package httpapi

import (
	"errors"
	"net/http"

	"github.com/catalogd/catalogd/api/catalogapi"
	"github.com/catalogd/catalogd/internal/query"
	"github.com/catalogd/catalogd/internal/store"
)

func (s *Server) listChannels(r *http.Request, snap *store.Snapshot) (any, error) {
	pkg, err := lookupPackage(r.Context(), snap, pathParam(r, "package"))
	if err != nil {
		return nil, err
	}
	items, err := snap.Catalog.Channels(r.Context(), pkg)
	if err != nil {
		return nil, err
	}
	return catalogapi.ChannelList{Items: convertAll(items, apiChannelSummary)}, nil
}

func (s *Server) getChannel(r *http.Request, snap *store.Snapshot) (any, error) {
	pkg, err := lookupPackage(r.Context(), snap, pathParam(r, "package"))
	if err != nil {
		return nil, err
	}
	name := pathParam(r, "channel")
	ch, err := snap.Catalog.Channel(r.Context(), pkg, name)
	if errors.Is(err, query.ErrNotFound) {
		return nil, notFound("channel", "package %q has no channel %q", pkg.Name, name)
	}
	if err != nil {
		return nil, err
	}
	return apiChannel(ch), nil
}
