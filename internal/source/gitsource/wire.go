package gitsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"

	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/unpack"
)

// repository is one repository during one Fetch: a remote spoken to over
// the git protocol, or a local one read in place.
type repository interface {
	// refs lists the refs (for a remote, one request: ls-remote), once.
	refs(ctx context.Context) (*refList, error)
	// fetch makes the objects of t's commit readable; dir is the fetch's
	// own directory, for what a remote sends.
	fetch(ctx context.Context, t target, dir string) (objects, error)
	close()
}

// objects are the objects of a fetched commit: a pack, or a local
// repository's.
type objects interface {
	// object reads a whole commit, tree or tag.
	object(typ plumbing.ObjectType, h plumbing.Hash) ([]byte, error)
	// blobs calls emit with each file of plan and its blob's content,
	// and fails if a blob is missing.
	blobs(ctx context.Context, plan *treePlan, emit func(f treeFile, size int64, r io.Reader) error) error
	close()
}

// conn is one remote's transport of the upload-pack service: smart HTTP
// (two requests) or ssh (one exec, one stream).
type conn interface {
	// advertisement returns the stream of the ref advertisement.
	advertisement(ctx context.Context) (io.Reader, error)
	// uploadPack sends a request and returns the stream of the response.
	uploadPack(ctx context.Context, req []byte) (io.Reader, error)
	close()
}

// wireRepo speaks the upload-pack protocol (version 0) over a conn.
type wireRepo struct {
	conn   conn
	count  *counter
	spec   source.Git
	listed *refList
	caps   *capability.List
}

func (r *wireRepo) close() { r.conn.close() }

func (r *wireRepo) refs(ctx context.Context) (*refList, error) {
	if r.listed != nil {
		return r.listed, nil
	}
	stream, err := r.conn.advertisement(ctx)
	if err != nil {
		return nil, err
	}
	adv := packp.NewAdvRefs()
	if err := adv.Decode(stream); err != nil {
		if errors.Is(err, packp.ErrEmptyAdvRefs) {
			return nil, errors.New("the repository is empty")
		}
		return nil, fmt.Errorf("read the repository's refs: %w", r.count.failed(err))
	}
	l := &refList{refs: adv.References, peeled: adv.Peeled}
	if adv.Head != nil {
		l.head = *adv.Head
	}
	r.listed, r.caps = l, adv.Capabilities
	return l, nil
}

// fetch asks for t's commit at depth 1 and stores the pack in dir.
func (r *wireRepo) fetch(ctx context.Context, t target, dir string) (objects, error) {
	refs, err := r.refs(ctx)
	if err != nil {
		return nil, err
	}
	t = wantFor(refs, r.spec, t)
	byID := t.want.IsZero()
	if byID {
		t.want = plumbing.NewHash(t.commit)
	}
	req, band := r.request(t.want)
	resp, err := r.conn.uploadPack(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := readAcknowledgements(resp); err != nil {
		err = r.count.failed(err)
		var refused *refusedError
		if byID && errors.As(err, &refused) {
			return nil, fmt.Errorf("the server does not send commit %s, %s: the leader publishes the new commit at its next poll (%w)", t.commit, noLongerNamed(r.spec.Ref), err)
		}
		return nil, err
	}
	pack := resp
	switch band {
	case capability.Sideband64k:
		pack = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case capability.Sideband:
		pack = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	p, err := readPack(ctx, pack, dir, maxSpillBytes)
	if err != nil {
		return nil, fmt.Errorf("receive commit %s: %w", t.commit, r.count.failed(err))
	}
	return p, nil
}

// noLongerNamed says, in a message, that ref moved on from a commit.
func noLongerNamed(ref string) string {
	switch {
	case ref == "":
		return "which the default branch no longer names"
	case isObjectID(strings.ToLower(ref)):
		return "which no ref the server advertises names"
	}
	return fmt.Sprintf("which ref %q no longer names", ref)
}

// request is the upload-request for want: depth 1, no tags, no progress,
// the pack multiplexed when the server can; band is the side band chosen.
func (r *wireRepo) request(want plumbing.Hash) (req []byte, band capability.Capability) {
	caps := []string{}
	switch {
	case r.caps.Supports(capability.Sideband64k):
		band = capability.Sideband64k
	case r.caps.Supports(capability.Sideband):
		band = capability.Sideband
	}
	if band != "" {
		caps = append(caps, band.String())
	}
	for _, c := range []capability.Capability{capability.OFSDelta, capability.Shallow, capability.NoProgress} {
		if r.caps.Supports(c) {
			caps = append(caps, c.String())
		}
	}
	caps = append(caps, "agent="+userAgent)
	var b bytes.Buffer
	e := pktline.NewEncoder(&b)
	_ = e.Encodef("want %s %s\n", want, strings.Join(caps, " "))
	if r.caps.Supports(capability.Shallow) {
		_ = e.Encodef("deepen 1\n")
	}
	_ = e.Flush()
	_ = e.Encodef("done\n")
	return b.Bytes(), band
}

// refusedError is the server's ERR line in answer to a request.
type refusedError struct{ msg string }

func (e *refusedError) Error() string { return "the server refused: " + e.msg }

// readAcknowledgements reads what precedes the pack: shallow lines, a
// flush, then NAK (or ACK), or the server's ERR.
func readAcknowledgements(r io.Reader) error {
	s := pktline.NewScanner(r)
	for s.Scan() {
		line := bytes.TrimSuffix(s.Bytes(), []byte("\n"))
		switch {
		case len(line) == 0, bytes.HasPrefix(line, []byte("shallow ")), bytes.HasPrefix(line, []byte("unshallow ")):
		case bytes.Equal(line, []byte("NAK")), bytes.HasPrefix(line, []byte("ACK ")):
			return nil
		default:
			return fmt.Errorf("unexpected answer from the server before the pack (%d bytes)", len(line))
		}
	}
	var errLine *pktline.ErrorLine
	switch err := s.Err(); {
	case errors.As(err, &errLine):
		return &refusedError{msg: printable(errLine.Text)}
	case err != nil:
		return fmt.Errorf("read the server's answer: %w", err)
	}
	return errors.New("the server's answer ended before the pack")
}

// printable keeps a server's message to one short line of printable text.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, s)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// counter counts the bytes received from the remote in one Fetch, and
// stops reading beyond max.
type counter struct {
	n, max int64
	// hit is the bound that stopped the reads: the download limit, or the
	// idle bound of an ssh connection (see silence), recorded by the
	// reading goroutine.
	hit error
}

// failed returns the error of the bound that stopped a read (decoders wrap
// or flatten what their reader returned), else err.
func (c *counter) failed(err error) error {
	if c.hit != nil {
		return c.hit
	}
	return err
}

func (c *counter) reader(r io.Reader) io.Reader { return &countingReader{r: r, c: c} }

type countingReader struct {
	r io.Reader
	c *counter
}

func (cr *countingReader) Read(p []byte) (int, error) {
	if cr.c.hit != nil {
		return 0, cr.c.hit
	}
	n, err := cr.r.Read(p)
	cr.c.n += int64(n)
	if cr.c.n > cr.c.max {
		cr.c.hit = &unpack.LimitError{Limit: "MaxDownloadBytes", Max: cr.c.max, Entry: "the repository's download"}
		return n, cr.c.hit
	}
	return n, err
}
