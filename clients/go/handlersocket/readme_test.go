// The README's programs, run as written against `hsd serve --demo`: every
// ```go block of clients/go/README.md is a whole program, built in a module
// of its own that imports this one with the replace the README shows, run
// in order against one fresh hsd, and its output compared with the ```text
// block after it. The addresses 127.0.0.1:9998 and :9999 become hsd's.

package handlersocket_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hsd-project/hsd/clients/go/internal/testserver"
)

// example is one program of the README and the output it must print.
type example struct {
	line   int
	code   string
	output string
}

// readmeExamples pairs each ```go block with the ```text block after it.
func readmeExamples(text string) ([]example, error) {
	var out []example
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```go" {
			continue
		}
		ex := example{line: i + 1}
		block, next, err := fenced(lines, i)
		if err != nil {
			return nil, err
		}
		ex.code = block
		for next < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[next]), "```") {
			next++
		}
		if next == len(lines) || strings.TrimSpace(lines[next]) != "```text" {
			return nil, fmt.Errorf("README line %d: a ```go block must be followed by a ```text block of its output", ex.line)
		}
		ex.output, i, err = fenced(lines, next)
		if err != nil {
			return nil, err
		}
		out = append(out, ex)
	}
	return out, nil
}

// fenced is the body of the fenced block opening at lines[start], and the
// index of the line after its closing fence.
func fenced(lines []string, start int) (string, int, error) {
	for end := start + 1; end < len(lines); end++ {
		if strings.TrimSpace(lines[end]) == "```" {
			return strings.Join(lines[start+1:end], "\n") + "\n", end + 1, nil
		}
	}
	return "", 0, fmt.Errorf("README line %d: unclosed block", start+1)
}

func goTool() string {
	if path, err := exec.LookPath("go"); err == nil {
		return path
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

func TestReadmeExamples(t *testing.T) {
	repo, err := testserver.Repo()
	check(t, err)
	module := filepath.Join(repo, "clients", "go")
	text, err := os.ReadFile(filepath.Join(module, "README.md"))
	check(t, err)
	examples, err := readmeExamples(string(text))
	check(t, err)
	if len(examples) == 0 {
		t.Fatal("the README has no ```go programs")
	}

	data := filepath.Join(t.TempDir(), "data")
	h, err := testserver.StartHsd(data, "--demo")
	check(t, err)
	defer h.Stop()
	// The table the README makes with hsd sql before its writes.
	_, err = testserver.HsdSQL(data, "test", "CREATE TABLE items (k TEXT PRIMARY KEY, v TEXT, n INTEGER)")
	check(t, err)

	// A module of the README's programs, importing this one as the README says.
	dir := t.TempDir()
	gomod := fmt.Sprintf("module example.com/readme\n\ngo 1.26\n\nrequire github.com/hsd-project/hsd/clients/go v0.0.0\n\nreplace github.com/hsd-project/hsd/clients/go => %s\n", module)
	check(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644))
	ports := strings.NewReplacer("127.0.0.1:9999", h.WriteAddr(), "127.0.0.1:9998", h.ReadAddr())
	for i, ex := range examples {
		if !strings.HasPrefix(ex.code, "package main\n") {
			t.Fatalf("README line %d: a ```go block must be a whole program (package main)", ex.line)
		}
		sub := filepath.Join(dir, fmt.Sprintf("example%d", i+1))
		check(t, os.MkdirAll(sub, 0o755))
		check(t, os.WriteFile(filepath.Join(sub, "main.go"), []byte(ports.Replace(ex.code)), 0o644))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, goTool(), "build", "-o", filepath.Join(dir, "bin")+string(filepath.Separator), "./...")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOPROXY=off", "GOTOOLCHAIN=local")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the README's programs: %v\n%s", err, out)
	}
	for i, ex := range examples {
		run := exec.CommandContext(ctx, filepath.Join(dir, "bin", fmt.Sprintf("example%d", i+1)))
		var stderr bytes.Buffer
		run.Stderr = &stderr
		got, err := run.Output()
		if err != nil {
			t.Fatalf("README line %d: the program failed: %v\n%s", ex.line, err, stderr.Bytes())
		}
		if want := ports.Replace(ex.output); string(got) != want {
			t.Errorf("README line %d: the program printed\n%s\nthe README says\n%s", ex.line, got, want)
		}
	}
}
