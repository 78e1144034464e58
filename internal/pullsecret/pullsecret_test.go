package pullsecret_test

import (
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/catalogd/catalogd/internal/pullsecret"
	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/registrytest"
)

const demoDir = "../../test/testdata/demo"

func dockerConfigSecret(ns, name, host, user, pass string) corev1.Secret {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{"auth": auth}}})
	return corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: cfg},
	}
}

func TestFromSecrets(t *testing.T) {
	reg := registrytest.New(t, registrytest.WithBasicAuth("puller", "s3cret"))
	ref := reg.PushCatalog(t, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	tag := reg.Host + "/catalogs/demo:v1"
	good := dockerConfigSecret("olm", "pull", reg.Host, "puller", "s3cret")
	wrong := dockerConfigSecret("olm", "stale", reg.Host, "puller", "old")
	other := dockerConfigSecret("olm", "other", "registry.example.com", "x", "y")
	legacyCfg, _ := json.Marshal(map[string]any{reg.Host: map[string]string{"username": "puller", "password": "s3cret"}})
	legacy := corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "olm", Name: "legacy"},
		Type:       corev1.SecretTypeDockercfg,
		Data:       map[string][]byte{corev1.DockerConfigKey: legacyCfg},
	}

	tests := []struct {
		name    string
		secrets []corev1.Secret
		ok      bool
	}{
		{name: "no secrets is anonymous and refused", secrets: nil},
		{name: "dockerconfigjson secret", secrets: []corev1.Secret{good}, ok: true},
		{name: "legacy dockercfg secret", secrets: []corev1.Secret{legacy}, ok: true},
		{name: "secret for another registry is not used", secrets: []corev1.Secret{other}},
		{name: "earlier secret wins for the same registry", secrets: []corev1.Secret{good, wrong}, ok: true},
		{name: "earlier wrong secret wins too", secrets: []corev1.Secret{wrong, good}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc, err := pullsecret.FromSecrets(t.Context(), tt.secrets)
			if err != nil {
				t.Fatalf("FromSecrets: %v", err)
			}
			u, err := unpack.New(unpack.Options{Keychain: kc, InsecureRegistries: []string{reg.Host}})
			if err != nil {
				t.Fatalf("unpack.New: %v", err)
			}
			got, err := u.Resolve(t.Context(), tag)
			if !tt.ok {
				if err == nil || unpack.IsTerminal(err) {
					t.Errorf("Resolve: error %v, want a retryable error", err)
				}
				if err != nil && strings.Contains(err.Error(), "s3cret") {
					t.Errorf("error reveals the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if got != ref {
				t.Errorf("Resolve = %s, want %s", got, ref)
			}
			if _, err := u.Unpack(t.Context(), got, filepath.Join(t.TempDir(), "dst")); err != nil {
				t.Errorf("Unpack: %v", err)
			}
		})
	}

	t.Run("unusable secrets are named", func(t *testing.T) {
		opaque := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "olm", Name: "opaque"}, Type: corev1.SecretTypeOpaque}
		broken := good
		broken.Name = "broken"
		broken.Data = map[string][]byte{corev1.DockerConfigJsonKey: []byte("{not json")}
		empty := good
		empty.Name = "empty"
		empty.Data = nil
		for _, s := range []corev1.Secret{opaque, broken, empty} {
			_, err := pullsecret.FromSecrets(t.Context(), []corev1.Secret{good, s})
			if err == nil || !strings.Contains(err.Error(), "olm/"+s.Name) {
				t.Errorf("secret %s: error %v, want one naming olm/%s", s.Name, err, s.Name)
			}
		}
	})
}
