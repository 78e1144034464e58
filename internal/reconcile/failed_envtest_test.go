package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalogdv1 "github.com/catalogd/catalogd/api/v1"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/test/await"
	"github.com/catalogd/catalogd/test/registrytest"
)

// TestFailedOnEveryReplica: a ClusterCatalog whose content cannot index is
// Failed, with the same reason, on the leader, which pulled the content,
// and on a replica that never did (the Serving condition tells it), as
// their answers through one Service must agree. Pinned at a digest the
// leader gives up (Progressing Blocked); under a tag it resolves the tag
// again (Retrying), and a fix pushed there makes both replicas serve.
func TestFailedOnEveryReplica(t *testing.T) {
	reg := registrytest.New(t)
	cfg, scheme, c := startAPIServer(t)
	replicas := map[string]*replica{
		"leader":   startReplica(t, cfg, scheme, replicaOptions{insecureRegistries: []string{reg.Host}, leader: true}),
		"follower": startReplica(t, cfg, scheme, replicaOptions{insecureRegistries: []string{reg.Host}}),
	}
	pinned := reg.PushCatalog(t, "catalogs/pinned:v1", brokenCatalog(t), registrytest.PushOptions{})
	reg.PushCatalog(t, "catalogs/tagged:latest", brokenCatalog(t), registrytest.PushOptions{})
	for name, ref := range map[string]string{"pinned": pinned, "tagged": reg.Host + "/catalogs/tagged:latest"} {
		if err := c.Create(context.Background(), &catalogdv1.ClusterCatalog{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: catalogdv1.ClusterCatalogSpec{Source: catalogdv1.CatalogSource{Type: catalogdv1.SourceTypeImage,
				Image: &catalogdv1.ImageSource{Ref: ref}}}}); err != nil {
			t.Fatal(err)
		}
	}

	// state is what a replica answers of a catalog: its state and lastError.
	state := func(r *replica, name string) (catalogs.State, string) {
		cat, _ := r.cats.Get(name)
		_, indexed := r.store.Info(name)
		return cat.State(indexed), cat.LastError
	}
	for _, tc := range []struct {
		name        string
		progressing metav1.ConditionStatus
		reason      string
	}{
		{"pinned", metav1.ConditionFalse, catalogdv1.ReasonBlocked},
		{"tagged", metav1.ConditionTrue, catalogdv1.ReasonRetrying},
	} {
		await.Until(t, tc.name+" Failed on every replica", waitTimeout, func() error {
			cat := getCatalog(t, c, tc.name)
			if err := condition(cat, catalogdv1.TypeProgressing, tc.progressing, tc.reason); err != nil {
				return err
			}
			if err := condition(cat, catalogdv1.TypeServing, metav1.ConditionFalse, catalogdv1.ReasonUnavailable); err != nil {
				return err
			}
			for who, r := range replicas {
				if s, lastError := state(r, tc.name); s != catalogs.Failed || !strings.Contains(lastError, "catalog.json") {
					return fmt.Errorf("%s: %s, lastError %q; want Failed, naming catalog.json", who, s, lastError)
				}
			}
			return nil
		})
		msg := meta.FindStatusCondition(getCatalog(t, c, tc.name).Status.Conditions, catalogdv1.TypeServing).Message
		if !strings.Contains(msg, "failed to index") {
			t.Errorf("%s: Serving message %q does not say the content failed", tc.name, msg)
		}
	}

	fixed := reg.PushCatalog(t, "catalogs/tagged:latest", demoDir, registrytest.PushOptions{})
	await.Until(t, "the fix served on every replica", waitTimeout, func() error {
		for who, r := range replicas {
			info, _ := r.store.Info("tagged")
			if s, lastError := state(r, "tagged"); s != catalogs.Serving || lastError != "" || info.SourceRef != fixed {
				return fmt.Errorf("%s: %s, lastError %q, serving %q; want %s serving without an error", who, s, lastError, info.SourceRef, fixed)
			}
		}
		return nil
	})
}
