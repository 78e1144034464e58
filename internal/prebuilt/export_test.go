package prebuilt

import v1 "github.com/google/go-containerregistry/pkg/v1"

// CheckManifest is checkManifest, for the fuzz test.
func (c *Client) CheckManifest(m *v1.Manifest, digest string) error {
	return c.checkManifest(m, digest)
}

// Schema is the index schema the client reads.
func (c *Client) Schema() string { return c.schema }
