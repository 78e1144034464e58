// Package pullsecret finds registry credentials in Kubernetes image pull
// secrets, as the kubelet does for a pod. It is the manager's: it is its own
// package so that the Kubernetes client types it needs are linked only into
// the binary that reads Secrets (catalogd-manager), not into every process
// that pulls an image (catalogd serve, kubectl catalog).
package pullsecret

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/authn"
	k8schain "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// FromSecrets builds a keychain from image pull secrets of type
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
func FromSecrets(ctx context.Context, secrets []corev1.Secret) (authn.Keychain, error) {
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

// SecretReader reads the objects a Keychain needs, uncached, so that
// rotated or newly created secrets are used at once. Errors for a missing
// object satisfy apierrors.IsNotFound. The composition root adapts
// controller-runtime's API reader to it, which keeps this package free of
// controller-runtime.
type SecretReader interface {
	ServiceAccount(ctx context.Context, key types.NamespacedName) (*corev1.ServiceAccount, error)
	Secret(ctx context.Context, key types.NamespacedName) (*corev1.Secret, error)
}

// Keychain finds registry credentials as the kubelet does for a pod:
// the imagePullSecrets of ServiceAccount first, then Global. It reads them
// on every lookup, so rotated or newly created secrets are used without a
// restart; missing ones mean anonymous pulls. Credentials are never logged.
type Keychain struct {
	Reader SecretReader
	// ServiceAccount and Global are unset when their Name is empty.
	ServiceAccount types.NamespacedName
	Global         types.NamespacedName
	Log            logr.Logger
}

// lookupTimeout bounds the API requests of one Keychain lookup.
const lookupTimeout = 30 * time.Second

// Resolve implements authn.Keychain.
func (k *Keychain) Resolve(res authn.Resource) (authn.Authenticator, error) {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	var names []types.NamespacedName
	if k.ServiceAccount.Name != "" {
		switch sa, err := k.Reader.ServiceAccount(ctx, k.ServiceAccount); {
		case apierrors.IsNotFound(err):
			k.Log.V(1).Info("service account not found; not using its imagePullSecrets", "serviceAccount", k.ServiceAccount.String())
		case err != nil:
			return nil, fmt.Errorf("reading service account %s: %w", k.ServiceAccount, err)
		default:
			for _, ref := range sa.ImagePullSecrets {
				names = append(names, types.NamespacedName{Namespace: sa.Namespace, Name: ref.Name})
			}
		}
	}
	if k.Global.Name != "" {
		names = append(names, k.Global)
	}
	var secrets []corev1.Secret
	for _, name := range names {
		secret, err := k.Reader.Secret(ctx, name)
		if err != nil {
			if apierrors.IsNotFound(err) {
				k.Log.V(1).Info("pull secret not found; skipping it", "secret", name.String())
				continue
			}
			return nil, fmt.Errorf("reading pull secret %s: %w", name, err)
		}
		secrets = append(secrets, *secret)
	}
	if len(secrets) == 0 {
		return authn.Anonymous, nil
	}
	kc, err := FromSecrets(ctx, secrets)
	if err != nil {
		return nil, err
	}
	return kc.Resolve(res)
}
