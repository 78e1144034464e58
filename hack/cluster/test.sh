#!/usr/bin/env bash
# test.sh is `make test-cluster`: brings up the one-node cluster (up.sh),
# imports the catalogd image tarball given as $1 into its containerd, runs the
# Go test in test/cluster against it, and tears the cluster down (down.sh)
# whatever the outcome. CLUSTER_KEEP=1 leaves the cluster running for a look
# (run down.sh afterwards).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

image_tar=${1:?usage: test.sh IMAGE_TARBALL}
[ -r "$image_tar" ] || die "cannot read the image tarball $image_tar"

if [ "${CLUSTER_KEEP:-}" != 1 ]; then
	trap '"$here/down.sh"' EXIT
fi
"$here/up.sh"

# The tarball names its image; the pods run it with imagePullPolicy Never.
out=$(ctr -a "$STATE/containerd.sock" -n k8s.io images import "$image_tar")
image=$(sed -n 's/^unpacking \([^ ]*\) (sha256:.*/\1/p' <<<"$out" | head -n 1)
[ -n "$image" ] || die "no image name in the output of ctr images import: $out"
log "testing image $image"

cd "$repo"
CATALOGD_CLUSTER_STATE="$STATE" CATALOGD_CLUSTER_KUBECTL="$CLUSTER_BIN/kubectl" \
	CATALOGD_CLUSTER_IMAGE="$image" CATALOGD_CLUSTER_NODE_IP="$NODE_IP" \
	${GO:-go} test -tags cluster -count=1 -v -timeout 20m ./test/cluster/
