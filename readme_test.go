package catalogd

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestREADME checks what the README promises of the rest of the
// repository: every make target it names is one `make help` lists, and the
// example that filters bundles by a version range says why the catalog's
// pre-releases are not in its answer.
func TestREADME(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("make help lists every target the README names", func(t *testing.T) {
		out, err := exec.Command("make", "--no-print-directory", "help").Output()
		if err != nil {
			t.Fatalf("make help: %v", err)
		}
		var listed []string
		for line := range strings.Lines(string(out)) {
			if f := strings.Fields(line); len(f) > 0 {
				listed = append(listed, f[0])
			}
		}
		for _, m := range regexp.MustCompile("`make ([a-z][a-z-]*)").FindAllSubmatch(readme, -1) {
			if target := string(m[1]); !slices.Contains(listed, target) {
				t.Errorf("the README names `make %s`, which `make help` does not list", target)
			}
		}
		for _, m := range regexp.MustCompile(`(?m)^make ([a-z][a-z-]*)`).FindAllSubmatch(readme, -1) {
			if target := string(m[1]); !slices.Contains(listed, target) {
				t.Errorf("the README's commands run `make %s`, which `make help` does not list", target)
			}
		}
	})
	t.Run("the version range example says pre-releases are left out", func(t *testing.T) {
		var comment []string
		for s := bufio.NewScanner(strings.NewReader(string(readme))); s.Scan(); {
			line := s.Text()
			if strings.Contains(line, "bundles?version=%3E%3D1.2.0'") {
				if !strings.Contains(strings.Join(comment, " "), "pre-release") {
					t.Errorf("the comment above %q does not say that a range without a pre-release leaves pre-releases out:\n%s",
						line, strings.Join(comment, "\n"))
				}
				return
			}
			if strings.HasPrefix(line, "#") {
				comment = append(comment, line)
			} else {
				comment = nil
			}
		}
		t.Fatal("the README has no bundles?version=%3E%3D1.2.0 example")
	})
}
