package unpack

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	k8schain "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	corev1 "k8s.io/api/core/v1"
)

// KeychainFromSecrets builds a keychain from image pull secrets of type
// kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg, matching
// registries the way the kubelet does (host, or host/path prefix, with
// wildcards). Callers combine the global pull secret and a catalog's
// imagePullSecrets into one slice: when two secrets hold credentials for the
// same registry entry the earlier one wins, so put the more specific secrets
// first. A more specific entry (host/path over host) wins across secrets.
//
// Unlike the kubelet, a secret of another type, or one without its config
// key, is an error rather than silently skipped, so that a typo in a secret
// shows up in status. Errors name the secret, never its content.
func KeychainFromSecrets(ctx context.Context, secrets []corev1.Secret) (authn.Keychain, error) {
	for _, s := range secrets {
		var key string
		switch s.Type {
		case corev1.SecretTypeDockerConfigJson:
			key = corev1.DockerConfigJsonKey
		case corev1.SecretTypeDockercfg:
			key = corev1.DockerConfigKey
		default:
			return nil, fmt.Errorf("using pull secret %s/%s: type is %q, want %q or %q",
				s.Namespace, s.Name, s.Type, corev1.SecretTypeDockerConfigJson, corev1.SecretTypeDockercfg)
		}
		if len(s.Data[key]) == 0 {
			return nil, fmt.Errorf("using pull secret %s/%s: no %s data", s.Namespace, s.Name, key)
		}
		// Parse each secret alone so that an error says which one is broken.
		if _, err := k8schain.NewFromPullSecrets(ctx, []corev1.Secret{s}); err != nil {
			return nil, fmt.Errorf("using pull secret %s/%s: %w", s.Namespace, s.Name, err)
		}
	}
	kc, err := k8schain.NewFromPullSecrets(ctx, secrets)
	if err != nil {
		return nil, fmt.Errorf("building keychain from pull secrets: %w", err)
	}
	return kc, nil
}
