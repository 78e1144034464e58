#!/usr/bin/env bash
# down.sh stops the cluster that up.sh started and removes what it leaves on
# the host outside $CLUSTER_STATE: pod containers and their network
# namespaces, mounts under the state directory, the kubelet's cgroups,
# kube-proxy's and the CNI plugins' iptables chains, the bridge, and the
# sysctls up.sh changed. It is safe to run twice, and after a failed up.sh.
# CLUSTER_KEEP_STATE=1 keeps the state directory (logs, certificates).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

# stop NAME: SIGTERM, then SIGKILL after 15s, the component up.sh started.
stop() {
	local pid
	pid=$(awk -v n="$1" '$1 == n { print $2 }' "$STATE/pids" 2>/dev/null)
	[ -n "$pid" ] || return 0
	kill "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 15; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 1
	done
	kill -9 "$pid" 2>/dev/null
}

# Pods first, through the API, so that the kubelet stops their sandboxes
# through the CRI, which has the CNI plugin release their addresses and network
# namespaces; controllers go first so they do not recreate the pods.
if [ -e "$STATE/admin.kubeconfig" ] && kc get --raw /readyz >/dev/null 2>&1; then
	kc delete deployments,replicasets,statefulsets,daemonsets,jobs --all --all-namespaces --wait=false >/dev/null 2>&1
	kc delete pods --all --all-namespaces --grace-period=1 --timeout=90s >/dev/null 2>&1
fi
# Then the kubelet, so it does not restart what is removed below.
stop kubelet
sock="$STATE/containerd.sock"
netns=
if [ -S "$sock" ] && ctr -a "$sock" version >/dev/null 2>&1; then
	# Whatever is left (static pods, a failed deletion) is killed directly;
	# first note the network namespaces of the sandboxes, which nothing
	# releases when they are killed.
	netns=$(ctr -a "$sock" -n k8s.io containers ls -q 2>/dev/null |
		while read -r c; do ctr -a "$sock" -n k8s.io containers info "$c" 2>/dev/null; done |
		grep -o '/var/run/netns/cni-[0-9a-f-]*' | sort -u)
	for t in $(ctr -a "$sock" -n k8s.io tasks ls -q 2>/dev/null); do
		ctr -a "$sock" -n k8s.io tasks kill -s SIGKILL "$t" >/dev/null 2>&1
	done
	sleep 1
	for t in $(ctr -a "$sock" -n k8s.io tasks ls -q 2>/dev/null); do
		ctr -a "$sock" -n k8s.io tasks rm -f "$t" >/dev/null 2>&1
	done
	for c in $(ctr -a "$sock" -n k8s.io containers ls -q 2>/dev/null); do
		ctr -a "$sock" -n k8s.io containers rm "$c" >/dev/null 2>&1
	done
fi
for c in kube-proxy kube-scheduler kube-controller-manager kube-apiserver etcd containerd; do
	stop "$c"
done
# containerd-shim processes of this cluster's containers, found by the state
# directory in their command line (no shim of another containerd matches).
for p in $(pgrep -f "containerd-shim-runc-v2 .*-address $STATE/containerd.sock" 2>/dev/null); do
	kill -9 "$p" 2>/dev/null
done
rm -f "$STATE/pids"

# Network namespaces of the pods killed above rather than stopped: a killed
# sandbox leaves its CNI namespace pinned under /var/run/netns.
for ns in $netns; do
	umount "$ns" 2>/dev/null
	rm -f "$ns"
done

# Mounts under the state directory (overlay rootfs, shm, projected volumes),
# deepest first.
awk -v s="$STATE/" 'index($2, s) == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r m; do
	umount "$m" 2>/dev/null || umount -l "$m"
done

# The kubelet's cgroups (cgroupfs driver): kubepods in every hierarchy.
for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
	[ -d "$h/kubepods" ] || continue
	find "$h/kubepods" -depth -type d -exec rmdir {} \; 2>/dev/null
done

# kube-proxy's rules, then what remains: the CNI plugins' chains (CNI-*),
# the kubelet's (KUBE-FIREWALL, KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT) and
# up.sh's guard of the Service range (CATALOGD-SERVICE-RANGE), in IPv4 and
# IPv6. Nothing else on the machine names its chains so.
if [ -x "$CLUSTER_BIN/kube-proxy" ]; then
	"$CLUSTER_BIN/kube-proxy" --cleanup >/dev/null 2>&1
fi
for ipt in iptables ip6tables; do
	for table in filter nat mangle; do
		chains=$("$ipt" -t "$table" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^(KUBE|CNI|CATALOGD)-/ { print $2 }')
		[ -n "$chains" ] || continue
		# Rules of other chains that jump to ours, then ours.
		"$ipt" -t "$table" -S 2>/dev/null | awk '$1 == "-A" && $2 !~ /^(KUBE|CNI|CATALOGD)-/ && $0 ~ / -j (KUBE|CNI|CATALOGD)-/ { $1 = "-D"; print }' |
			while read -r rule; do eval "$ipt -t $table $rule"; done
		for chain in $chains; do "$ipt" -t "$table" -F "$chain" 2>/dev/null; done
		for chain in $chains; do "$ipt" -t "$table" -X "$chain" 2>/dev/null; done
	done
done
ip link del catalogd0 2>/dev/null

rmdir /run/containerd/fifo /run/containerd/s /run/containerd/runc/k8s.io /run/containerd/runc /run/containerd 2>/dev/null

if [ -e "$STATE/sysctl.orig" ]; then
	while IFS="=" read -r key value; do
		echo "$value" >"/proc/sys/${key//.//}"
	done <"$STATE/sysctl.orig"
	rm -f "$STATE/sysctl.orig"
fi

if [ "${CLUSTER_KEEP_STATE:-}" != 1 ]; then
	rm -rf "$STATE"
fi
log "cluster is down"
