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

func TestApply(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	limited := fstest.MapFS{"proc/self/cgroup": file("0::/\n"), "sys/fs/cgroup/memory.max": file(strconv.Itoa(512 << 20))}
	noEnv := func(string) string { return "" }

	tests := []struct {
		name       string
		fsys       fstest.MapFS
		getenv     func(string) string
		wantSource Source
		wantLimit  int64 // what the runtime reports afterwards
	}{
		{name: "a fraction of the cgroup limit", fsys: limited, getenv: noEnv,
			wantSource: FromCgroup, wantLimit: (512 << 20) / 100 * Percent},
		{name: "GOMEMLIMIT wins and is left to the runtime", fsys: limited,
			getenv:     func(k string) string { return map[string]string{"GOMEMLIMIT": "100MiB"}[k] },
			wantSource: FromEnvironment, wantLimit: before},
		{name: "no cgroup limit changes nothing", fsys: fstest.MapFS{}, getenv: noEnv,
			wantSource: None, wantLimit: before},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			debug.SetMemoryLimit(before)
			got, source, err := Apply(tt.fsys, tt.getenv)
			if err != nil {
				t.Fatal(err)
			}
			if source != tt.wantSource {
				t.Errorf("source = %q, want %q", source, tt.wantSource)
			}
			if inForce := debug.SetMemoryLimit(-1); inForce != tt.wantLimit {
				t.Errorf("runtime limit = %d, want %d", inForce, tt.wantLimit)
			}
			if source != None && got != debug.SetMemoryLimit(-1) {
				t.Errorf("Apply returned %d, the runtime has %d", got, debug.SetMemoryLimit(-1))
			}
		})
	}
}
