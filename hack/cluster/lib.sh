# shellcheck shell=bash disable=SC2034 # the settings are used by the scripts that source this file
# Shared settings and helpers of up.sh, down.sh and test.sh (sourced, not run).
# Ports stay clear of the defaults (6443, 2379, 10250, ...) so the cluster can
# run beside envtest and anything else on the machine.

STATE=${CLUSTER_STATE:-$repo/tmp/cluster}
CLUSTER_BIN=${CLUSTER_BIN:-$repo/bin/cluster}
K8S_BIN=${K8S_BIN:-$repo/bin/k8s}
CNI_BIN=${CNI_BIN:-/usr/lib/cni}
NODE_NAME=catalogd-node
# The first IPv4 address of the interface the default route leaves by: pods
# reach the apiserver there, through the kubernetes Service.
NODE_IP=${NODE_IP:-$(ip -4 -o route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')}
API_PORT=16443
ETCD_PORT=23790
ETCD_PEER_PORT=23800
KCM_PORT=16257
SCHED_PORT=16259
SERVICE_CIDR=10.96.0.0/16
API_SERVICE_IP=10.96.0.1
POD_CIDR=10.244.0.0/24
PAUSE_IMAGE=localhost/pause:catalogd
export PATH="$CLUSTER_BIN:$PATH"

log() { echo "cluster: $*" >&2; }
die() {
	log "$*"
	exit 1
}

# kc runs kubectl as the cluster admin.
kc() { "$CLUSTER_BIN/kubectl" --kubeconfig "$STATE/admin.kubeconfig" "$@"; }

# start NAME CMD...: runs CMD in its own session with its output in
# $STATE/logs/NAME.log and records NAME and its pid in $STATE/pids, which
# down.sh reads.
start() {
	local name=$1
	shift
	log "starting $name"
	setsid "$@" >"$STATE/logs/$name.log" 2>&1 </dev/null &
	echo "$name $!" >>"$STATE/pids"
}

# wait_for WHAT SECONDS CMD...: retries CMD every second until it succeeds;
# fails, showing the last output, after SECONDS.
wait_for() {
	local what=$1 secs=$2 out
	shift 2
	for ((i = 0; i < secs; i++)); do
		if out=$("$@" 2>&1); then
			return 0
		fi
		sleep 1
	done
	die "timed out after ${secs}s waiting for $what: $out"
}
