#!/usr/bin/env bash
# up.sh brings up a one-node Kubernetes cluster from processes on this host:
# containerd (with runc and the bridge CNI plugin), etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet and kube-proxy. It needs root,
# the Debian packages that mk/cluster.mk installs, and the binaries it builds.
# No image is ever pulled: the pause image is built locally and imported.
#
# Every file, socket and log lives under $CLUSTER_STATE; down.sh stops what
# this script starts and removes the mounts, cgroups, iptables chains and the
# bridge it leaves behind. The kubeconfig of the admin is
# $CLUSTER_STATE/admin.kubeconfig.
#
# Environment:
#   CLUSTER_STATE  state directory (default: tmp/cluster in the repository)
#   CLUSTER_BIN    kubelet, kube-proxy, kube-controller-manager, kube-scheduler,
#                  kubectl, pause, mkimage (default: bin/cluster)
#   K8S_BIN        kube-apiserver and etcd (default: bin/k8s, the envtest ones)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

[ "$(id -u)" = 0 ] || die "must run as root (containerd and the kubelet need it)"
for b in kubelet kube-proxy kube-controller-manager kube-scheduler kubectl pause mkimage; do
	[ -x "$CLUSTER_BIN/$b" ] || die "missing $CLUSTER_BIN/$b (make cluster-bins)"
done
for b in kube-apiserver etcd; do
	[ -x "$K8S_BIN/$b" ] || die "missing $K8S_BIN/$b (make envtest-bins)"
done
for c in containerd containerd-shim-runc-v2 runc iptables conntrack openssl ctr; do
	command -v "$c" >/dev/null || die "missing $c (apt-get install containerd runc containernetworking-plugins iptables conntrack openssl)"
done
[ -x "$CNI_BIN/bridge" ] || die "missing $CNI_BIN/bridge (apt-get install containernetworking-plugins)"
if [ -s "$STATE/pids" ]; then
	die "$STATE/pids lists running components: run hack/cluster/down.sh first"
fi

mkdir -p "$STATE"/{logs,pki,cni/net.d,manifests,etcd,kubelet,pod-logs}
: >"$STATE/pids"

# --- host networking -------------------------------------------------------
# Pods reach each other and Services through the bridge, which needs IP
# forwarding and bridged traffic to pass through iptables (kube-proxy's rules).
# down.sh puts back the values found here.
if [ ! -e "$STATE/sysctl.orig" ]; then
	{
		echo "net.ipv4.ip_forward=$(cat /proc/sys/net/ipv4/ip_forward)"
		echo "net.bridge.bridge-nf-call-iptables=$(cat /proc/sys/net/bridge/bridge-nf-call-iptables)"
	} >"$STATE/sysctl.orig"
fi
echo 1 >/proc/sys/net/ipv4/ip_forward
echo 1 >/proc/sys/net/bridge/bridge-nf-call-iptables

# A Service's address is reachable only through kube-proxy's rules, which
# rewrite it to a pod's. A connection made before kube-proxy has written the
# rules of a new Service leaves by the default route instead, and a gateway
# that answers every address (a transparent proxy, as sandboxes have) then
# holds it: the aggregator reuses such a connection for an APIService for as
# long as it lives, so the APIService never becomes Available. The filter
# table sees packets after kube-proxy's rewriting, so what still goes to the
# Service range here is refused at once, as in a cluster whose Service range
# routes nowhere, and the client retries through kube-proxy's rules.
# down.sh removes the chain.
iptables -N CATALOGD-SERVICE-RANGE 2>/dev/null || iptables -F CATALOGD-SERVICE-RANGE
iptables -A CATALOGD-SERVICE-RANGE -d "$SERVICE_CIDR" -p tcp -j REJECT --reject-with tcp-reset
iptables -A CATALOGD-SERVICE-RANGE -d "$SERVICE_CIDR" -j REJECT
for chain in OUTPUT FORWARD; do
	iptables -C "$chain" -j CATALOGD-SERVICE-RANGE 2>/dev/null || iptables -I "$chain" -j CATALOGD-SERVICE-RANGE
done

# --- certificates ------------------------------------------------------------
pki="$STATE/pki"
if [ ! -e "$pki/ca.crt" ]; then
	log "generating certificates in $pki"
	openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=catalogd-test-ca" \
		-keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
	# cert NAME SUBJECT [SANS]: a key and a certificate signed by the CA.
	cert() {
		local ext="$pki/$1.ext"
		{
			echo "basicConstraints=CA:FALSE"
			echo "keyUsage=digitalSignature,keyEncipherment"
			echo "extendedKeyUsage=serverAuth,clientAuth"
			[ -z "${3:-}" ] || echo "subjectAltName=$3"
		} >"$ext"
		openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$pki/$1.key" -out "$pki/$1.csr" 2>/dev/null
		openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
			-days 30 -extfile "$ext" -out "$pki/$1.crt" 2>/dev/null
	}
	cert apiserver "/CN=kube-apiserver" \
		"IP:127.0.0.1,IP:$NODE_IP,IP:$API_SERVICE_IP,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	cert admin "/O=system:masters/CN=catalogd-test-admin"
	cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" "IP:$NODE_IP,DNS:$NODE_NAME"
	cert controller-manager "/CN=system:kube-controller-manager"
	cert scheduler "/CN=system:kube-scheduler"
	cert proxy "/CN=system:kube-proxy"
	openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
	openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
fi
# The aggregator's own identity towards aggregated API servers (catalogd's
# package API): a client certificate from a CA of its own, which those
# servers read from the extension-apiserver-authentication ConfigMap.
if [ ! -e "$pki/front-proxy-ca.crt" ]; then
	openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=catalogd-test-front-proxy-ca" \
		-keyout "$pki/front-proxy-ca.key" -out "$pki/front-proxy-ca.crt" 2>/dev/null
	printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >"$pki/front-proxy-client.ext"
	openssl req -newkey rsa:2048 -nodes -subj "/CN=front-proxy-client" \
		-keyout "$pki/front-proxy-client.key" -out "$pki/front-proxy-client.csr" 2>/dev/null
	openssl x509 -req -in "$pki/front-proxy-client.csr" -CA "$pki/front-proxy-ca.crt" -CAkey "$pki/front-proxy-ca.key" \
		-CAcreateserial -days 30 -extfile "$pki/front-proxy-client.ext" -out "$pki/front-proxy-client.crt" 2>/dev/null
fi
for who in admin kubelet controller-manager scheduler proxy; do
	"$CLUSTER_BIN/kubectl" config set-cluster test --server="https://$NODE_IP:$API_PORT" \
		--certificate-authority="$pki/ca.crt" --embed-certs --kubeconfig="$STATE/$who.kubeconfig" >/dev/null
	"$CLUSTER_BIN/kubectl" config set-credentials "$who" --client-certificate="$pki/$who.crt" \
		--client-key="$pki/$who.key" --embed-certs --kubeconfig="$STATE/$who.kubeconfig" >/dev/null
	"$CLUSTER_BIN/kubectl" config set-context test --cluster=test --user="$who" --kubeconfig="$STATE/$who.kubeconfig" >/dev/null
	"$CLUSTER_BIN/kubectl" config use-context test --kubeconfig="$STATE/$who.kubeconfig" >/dev/null
done

# --- containerd ----------------------------------------------------------------
sed "s#@STATE@#$STATE#g; s#@CNI_BIN@#$CNI_BIN#g" "$here/containerd.toml.in" >"$STATE/containerd.toml"
sed "s#@STATE@#$STATE#g; s#@POD_CIDR@#$POD_CIDR#g" "$here/cni.conflist.in" >"$STATE/cni/net.d/10-catalogd.conflist"
start containerd containerd --config "$STATE/containerd.toml"
wait_for "containerd" 60 ctr -a "$STATE/containerd.sock" version
"$CLUSTER_BIN/mkimage" -name "$PAUSE_IMAGE" -out "$STATE/pause.tar" -entrypoint /pause pause="$CLUSTER_BIN/pause"
ctr -a "$STATE/containerd.sock" -n k8s.io images import "$STATE/pause.tar" >/dev/null

# --- control plane ---------------------------------------------------------
start etcd "$K8S_BIN/etcd" --data-dir "$STATE/etcd" \
	--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
	--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
	--initial-cluster "default=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync
wait_for "etcd" 60 curl -fsS "http://127.0.0.1:$ETCD_PORT/health"

start kube-apiserver "$K8S_BIN/kube-apiserver" \
	--etcd-servers "http://127.0.0.1:$ETCD_PORT" \
	--bind-address 0.0.0.0 --advertise-address "$NODE_IP" --secure-port "$API_PORT" \
	--service-cluster-ip-range "$SERVICE_CIDR" \
	--client-ca-file "$pki/ca.crt" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
	--kubelet-client-certificate "$pki/admin.crt" --kubelet-client-key "$pki/admin.key" \
	--kubelet-certificate-authority "$pki/ca.crt" \
	--service-account-issuer https://kubernetes.default.svc --service-account-key-file "$pki/sa.pub" \
	--service-account-signing-key-file "$pki/sa.key" \
	--authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction --allow-privileged \
	--requestheader-client-ca-file "$pki/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
	--requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
	--requestheader-extra-headers-prefix X-Remote-Extra- \
	--proxy-client-cert-file "$pki/front-proxy-client.crt" --proxy-client-key-file "$pki/front-proxy-client.key"
wait_for "kube-apiserver" 180 kc get --raw /readyz

start kube-controller-manager "$CLUSTER_BIN/kube-controller-manager" \
	--kubeconfig "$STATE/controller-manager.kubeconfig" \
	--authentication-kubeconfig "$STATE/controller-manager.kubeconfig" \
	--authorization-kubeconfig "$STATE/controller-manager.kubeconfig" \
	--bind-address 127.0.0.1 --secure-port "$KCM_PORT" --leader-elect=false \
	--use-service-account-credentials --service-account-private-key-file "$pki/sa.key" \
	--root-ca-file "$pki/ca.crt" --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
	--service-cluster-ip-range "$SERVICE_CIDR"
start kube-scheduler "$CLUSTER_BIN/kube-scheduler" \
	--kubeconfig "$STATE/scheduler.kubeconfig" \
	--authentication-kubeconfig "$STATE/scheduler.kubeconfig" \
	--authorization-kubeconfig "$STATE/scheduler.kubeconfig" \
	--bind-address 127.0.0.1 --secure-port "$SCHED_PORT" --leader-elect=false

# --- node ------------------------------------------------------------------------
sed "s#@STATE@#$STATE#g; s#@NODE_IP@#$NODE_IP#g" "$here/kubelet.yaml.in" >"$STATE/kubelet.yaml"
start kubelet "$CLUSTER_BIN/kubelet" --config "$STATE/kubelet.yaml" \
	--kubeconfig "$STATE/kubelet.kubeconfig" --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" \
	--root-dir "$STATE/kubelet" --cert-dir "$STATE/kubelet/pki"
sed "s#@STATE@#$STATE#g; s#@NODE_NAME@#$NODE_NAME#g; s#@POD_CIDR@#$POD_CIDR#g" "$here/kube-proxy.yaml.in" >"$STATE/kube-proxy.yaml"
start kube-proxy "$CLUSTER_BIN/kube-proxy" --config "$STATE/kube-proxy.yaml"

wait_for "node $NODE_NAME to register" 180 kc get node "$NODE_NAME"
kc wait --for=condition=Ready "node/$NODE_NAME" --timeout=180s
wait_for "the default service account" 120 kc -n default get serviceaccount default
log "cluster is up: export KUBECONFIG=$STATE/admin.kubeconfig"
