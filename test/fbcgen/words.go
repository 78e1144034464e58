package fbcgen

import (
	"math/rand/v2"
	"strings"
)

// Word lists for names and prose. Real catalogs are full of English text
// (descriptions are the largest field after bundle objects), so search and
// compression behave differently on random bytes than on words; the text
// below is deliberately ordinary.

var nameAdjectives = []string{
	"amber", "arctic", "azure", "bold", "brisk", "cedar", "cobalt", "coral", "crimson", "dapper",
	"delta", "dusty", "ember", "fable", "fern", "frost", "gentle", "glacier", "golden", "granite",
	"harbor", "hazel", "indigo", "iron", "jade", "juniper", "keen", "lunar", "maple", "marble",
	"meadow", "misty", "nimble", "north", "oak", "onyx", "opal", "pale", "pine", "polar",
	"quiet", "rapid", "raven", "ruby", "rust", "sage", "silver", "slate", "solar", "spruce",
	"steady", "stone", "swift", "tidal", "umber", "velvet", "violet", "willow", "winter", "zephyr",
}

var nameNouns = []string{
	"anchor", "atlas", "beacon", "bridge", "canal", "cask", "citadel", "compass", "conduit", "crane",
	"depot", "dock", "engine", "falcon", "ferry", "forge", "foundry", "garden", "gate", "harvest",
	"hive", "keeper", "kettle", "lantern", "ledger", "loom", "mill", "orbit", "outpost", "pilot",
	"pipeline", "quarry", "relay", "reservoir", "ridge", "rover", "sentry", "shepherd", "signal", "spindle",
	"spring", "stack", "steward", "switch", "tower", "tracker", "trellis", "vault", "warden", "wharf",
}

var nameSuffixes = []string{"operator", "operator", "operator", "controller", "manager", ""}

// Kinds owned by generated packages; a package takes a handful and puts them
// in its own API group.
var kindWords = []string{
	"Cluster", "Instance", "Backup", "Restore", "Schedule", "Policy", "Gateway", "Route", "Pipeline",
	"Task", "Runner", "Agent", "Collector", "Dashboard", "Alert", "Probe", "Tenant", "Project", "Bucket",
	"Volume", "Snapshot", "Secret", "Certificate", "Issuer", "Broker", "Topic", "Queue", "Stream",
	"Connector", "Mirror", "Replica", "Shard", "Index", "Query", "Job", "Workflow", "Template",
	"Config", "Profile", "Role", "Binding", "Quota", "Scanner", "Report", "Exporter", "Sink", "Source",
}

// sharedGVKs are APIs that several unrelated operators ship, as real
// catalogs have for monitoring, certificate and eventing APIs. They make
// "which packages provide this GVK" have many answers.
var sharedGVKs = []gvk{
	{"monitoring.example.io", "v1", "ServiceMonitor"},
	{"monitoring.example.io", "v1", "PodMonitor"},
	{"monitoring.example.io", "v1", "PrometheusRule"},
	{"cert.example.io", "v1", "Certificate"},
	{"cert.example.io", "v1", "Issuer"},
	{"events.example.io", "v1beta1", "EventSource"},
	{"events.example.io", "v1beta1", "Trigger"},
	{"storage.example.io", "v1alpha1", "VolumeBackup"},
	{"networking.example.io", "v1", "IngressRoute"},
	{"policy.example.io", "v1", "ClusterPolicy"},
}

var categories = []string{
	"Database", "Monitoring", "Logging & Tracing", "Security", "Storage", "Networking",
	"Developer Tools", "Integration & Delivery", "Streaming & Messaging", "AI/Machine Learning",
	"Big Data", "Application Runtime", "OpenShift Optional", "Cloud Provider", "Drivers and plugins",
}

var capabilityLevels = []string{"Basic Install", "Seamless Upgrades", "Full Lifecycle", "Deep Insights", "Auto Pilot"}

var verbs = []string{
	"deploys", "configures", "upgrades", "scales", "monitors", "backs up", "secures", "repairs",
	"rebalances", "tunes", "reconciles", "rotates credentials for", "exports metrics from", "validates",
}

var objects = []string{
	"database clusters", "message brokers", "ingress gateways", "log pipelines", "storage pools",
	"build runners", "model servers", "search indexes", "certificate authorities", "cache tiers",
	"service meshes", "object stores", "stream processors", "workflow engines", "API gateways",
}

var qualifiers = []string{
	"across namespaces", "with zero downtime", "from a single custom resource", "on any conformant cluster",
	"without manual steps", "according to declared policies", "in air-gapped environments",
	"with sensible defaults", "under heavy load", "for teams of every size",
}

var featureLines = []string{
	"Rolling upgrades that keep at least one replica serving traffic",
	"Automatic TLS with certificates rotated before they expire",
	"Point-in-time recovery from scheduled backups",
	"Horizontal scaling driven by observed load",
	"Metrics endpoints ready for scraping",
	"Status conditions that explain what the operator is waiting for",
	"Pause and resume of reconciliation for maintenance windows",
	"Configuration drift detection and repair",
	"Namespace-scoped or cluster-wide installation",
	"Resource requests and limits derived from the chosen size profile",
	"Audit events for every change the operator makes",
	"Offline installation from a mirrored registry",
	"Health checks that gate each upgrade step",
	"Per-tenant quotas enforced at admission time",
}

var keywordPool = []string{
	"database", "monitoring", "metrics", "backup", "storage", "security", "networking", "messaging",
	"streaming", "cache", "ci", "cd", "gitops", "observability", "logging", "tracing", "ai", "ml",
	"serverless", "policy", "certificates", "ingress", "search", "analytics", "kafka", "sql",
}

var firstNames = []string{
	"Ada", "Bram", "Chidi", "Dana", "Elif", "Farah", "Goran", "Hana", "Ivo", "Jun", "Kaia", "Luis",
	"Mei", "Nils", "Oona", "Pavel", "Quinn", "Rosa", "Sven", "Tariq", "Uma", "Vera", "Wen", "Yara",
}

var lastNames = []string{
	"Abara", "Berg", "Costa", "Dahl", "Eze", "Fischer", "Garcia", "Haddad", "Ito", "Jensen", "Kowalski",
	"Larsen", "Moreau", "Novak", "Okafor", "Petrov", "Quist", "Rahman", "Santos", "Tanaka", "Ueda", "Varga",
}

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

// pickN returns n distinct elements of s (n <= len(s)) in random order.
func pickN[T any](r *rand.Rand, s []T, n int) []T {
	out := make([]T, n)
	for i, j := range r.Perm(len(s))[:n] {
		out[i] = s[j]
	}
	return out
}

// title upper-cases the first letter of each space-separated word.
func title(s string) string {
	words := strings.Fields(s)
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	return strings.Join(words, " ")
}

// sentence writes one plausible sentence about an operator.
func sentence(r *rand.Rand, display string) string {
	switch r.IntN(6) {
	case 0:
		return display + " " + pick(r, verbs) + " " + pick(r, objects) + " " + pick(r, qualifiers) + "."
	case 1:
		return "It " + pick(r, verbs) + " " + pick(r, objects) + " and " + pick(r, verbs) + " " + pick(r, objects) + "."
	case 2:
		return "Operators of " + pick(r, objects) + " use it to cut routine work " + pick(r, qualifiers) + "."
	case 3:
		return "Every change is expressed as a custom resource, so it can be reviewed, versioned and rolled back " + pick(r, qualifiers) + "."
	case 4:
		return "The operator watches " + pick(r, objects) + " and " + pick(r, verbs) + " them when their spec changes."
	default:
		return "Status conditions report progress, and events explain why " + display + " is waiting."
	}
}
