package memlimit

import (
	"runtime/debug"
	"strconv"
	"testing"
	"testing/fstest"
)

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func TestCgroupLimit(t *testing.T) {
	const v1Host = "4:memory:/process_api/abc\n0::/\n"
	tests := []struct {
		name    string
		fsys    fstest.MapFS
		want    int64
		wantOK  bool
		wantErr bool
	}{
		{name: "no /proc: not Linux", fsys: fstest.MapFS{}},
		{
			name: "v2 container with its own namespace",
			fsys: fstest.MapFS{"proc/self/cgroup": file("0::/\n"), "sys/fs/cgroup/memory.max": file("536870912\n")},
			want: 512 << 20, wantOK: true,
		},
		{
			name: "v2 without a limit",
			fsys: fstest.MapFS{"proc/self/cgroup": file("0::/\n"), "sys/fs/cgroup/memory.max": file("max\n")},
		},
		{
			name: "v2 nested path on the host",
			fsys: fstest.MapFS{
				"proc/self/cgroup":                          file("0::/kubepods/pod1/c1\n"),
				"sys/fs/cgroup/kubepods/pod1/c1/memory.max": file("268435456\n"),
				"sys/fs/cgroup/memory.max":                  file("999999999\n"),
			},
			want: 256 << 20, wantOK: true,
		},
		{
			name: "v1 nested memory controller, as on this kind of host",
			fsys: fstest.MapFS{
				"proc/self/cgroup": file(v1Host),
				"sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes": file("1073741824\n"),
			},
			want: 1 << 30, wantOK: true,
		},
		{
			name: "v1 unlimited",
			fsys: fstest.MapFS{
				"proc/self/cgroup": file(v1Host),
				"sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes": file("9223372036854771712\n"),
			},
		},
		{
			name: "v1 container without a cgroup namespace sees its own at the root",
			fsys: fstest.MapFS{
				"proc/self/cgroup":                           file("4:cpu,memory:/kubepods/pod1/c1\n"),
				"sys/fs/cgroup/memory/memory.limit_in_bytes": file("134217728\n"),
			},
			want: 128 << 20, wantOK: true,
		},
		{
			name:    "garbage in the limit file",
			fsys:    fstest.MapFS{"proc/self/cgroup": file("0::/\n"), "sys/fs/cgroup/memory.max": file("lots\n")},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := CgroupLimit(tt.fsys)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("CgroupLimit = %d, %v; want %d, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name  string
		limit int64
		want  Budget
	}{
		{name: "no limit: no Go limit, SQLite's fixed bounds", limit: 0,
			want: Budget{SQLite: SQLite{SoftHeapLimit: 64 << 20, Conns: 8, CacheKiB: 512}}},
		// 256 MiB = 268435456 bytes: 1% is 2684354.
		{name: "256 MiB", limit: 256 << 20,
			want: Budget{Limit: 256 << 20, Go: 187904780, SQLite: SQLite{
				SoftHeapLimit: 26843540, HardHeapLimit: 53687080, Conns: 8, CacheKiB: 819}}},
		{name: "64 MiB: the smallest cache", limit: 64 << 20,
			want: Budget{Limit: 64 << 20, Go: 46976160, SQLite: SQLite{
				SoftHeapLimit: 6710880, HardHeapLimit: 13421760, Conns: 8, CacheKiB: 256}}},
		{name: "4 GiB: the largest cache", limit: 4 << 30,
			want: Budget{Limit: 4 << 30, Go: 3006477040, SQLite: SQLite{
				SoftHeapLimit: 429496720, HardHeapLimit: 858993440, Conns: 8, CacheKiB: 1024}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.limit)
			if got != tt.want {
				t.Errorf("Plan(%d) = %+v\nwant %+v", tt.limit, got, tt.want)
			}
			if tt.limit == 0 {
				return
			}
			// What the two allocators may hold at most, the SQLite pages
			// at twice their size, leaves a tenth for the rest.
			if held := got.Go + 2*got.SQLite.SoftHeapLimit; held > tt.limit/10*9 {
				t.Errorf("Go and SQLite may hold %d of %d bytes", held, tt.limit)
			}
		})
	}
}

func TestApply(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	limited := fstest.MapFS{"proc/self/cgroup": file("0::/\n"), "sys/fs/cgroup/memory.max": file(strconv.Itoa(512 << 20))}
	noEnv := func(string) string { return "" }
	withEnv := func(k string) string { return map[string]string{"GOMEMLIMIT": "100MiB"}[k] }
	const fromEnv = 100 << 20 // what the test sets as if GOMEMLIMIT=100MiB had

	tests := []struct {
		name       string
		fsys       fstest.MapFS
		getenv     func(string) string
		runtime    int64 // the runtime's limit beforehand
		wantSource Source
		wantLimit  int64 // the budget's whole
		wantGo     int64 // what the runtime reports afterwards
	}{
		{name: "shares of the cgroup limit", fsys: limited, getenv: noEnv, runtime: before,
			wantSource: FromCgroup, wantLimit: 512 << 20, wantGo: (512 << 20) / 100 * GoPercent},
		{name: "GOMEMLIMIT is left to the runtime, SQLite shares the cgroup limit", fsys: limited, getenv: withEnv, runtime: fromEnv,
			wantSource: FromCgroup, wantLimit: 512 << 20, wantGo: fromEnv},
		{name: "GOMEMLIMIT alone is the Go share of the whole", fsys: fstest.MapFS{}, getenv: withEnv, runtime: fromEnv,
			wantSource: FromEnvironment, wantLimit: fromEnv / GoPercent * 100, wantGo: fromEnv},
		{name: "no limit changes nothing", fsys: fstest.MapFS{}, getenv: noEnv, runtime: before,
			wantSource: None, wantGo: before},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			debug.SetMemoryLimit(tt.runtime)
			got, err := Apply(tt.fsys, tt.getenv)
			if err != nil {
				t.Fatal(err)
			}
			if got.Source != tt.wantSource || got.Limit != tt.wantLimit {
				t.Errorf("budget of %d bytes from %q, want %d from %q", got.Limit, got.Source, tt.wantLimit, tt.wantSource)
			}
			if inForce := debug.SetMemoryLimit(-1); inForce != tt.wantGo {
				t.Errorf("runtime limit = %d, want %d", inForce, tt.wantGo)
			}
			if got.Source != None && got.Go != debug.SetMemoryLimit(-1) {
				t.Errorf("Apply returned %d, the runtime has %d", got.Go, debug.SetMemoryLimit(-1))
			}
			if want := Plan(tt.wantLimit).SQLite; got.SQLite != want {
				t.Errorf("SQLite's share %+v, want %+v", got.SQLite, want)
			}
		})
	}
}
