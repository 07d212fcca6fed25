package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/weftlabs/weft/platform/config"
)

// The container can't be built here (no image can be pulled), so these
// tests check what can be checked without Docker: the Dockerfile's stages
// and user, that its build command yields a static binary, and the shape
// of compose.yaml and the files it mounts.

const repoRoot = "../.."

// dockerfileLines returns the Dockerfile's instructions, continuation
// lines joined and comments dropped.
func dockerfileLines(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	cur := ""
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "#") || (l == "" && cur == "") {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		out = append(out, cur+l)
		cur = ""
	}
	return out
}

func TestDockerfile(t *testing.T) {
	lines := dockerfileLines(t)
	var froms []int
	for i, l := range lines {
		if strings.HasPrefix(l, "FROM ") {
			froms = append(froms, i)
		}
	}
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, got %d stages", len(froms))
	}
	final := lines[froms[len(froms)-1]:]
	if base := final[0]; !strings.Contains(base, "gcr.io/distroless/static") && !strings.Contains(base, "FROM scratch") {
		t.Errorf("final stage %q: want a minimal base (distroless/static or scratch)", base)
	}
	user := ""
	for _, l := range final {
		if u, ok := strings.CutPrefix(l, "USER "); ok {
			user = u
		}
	}
	if user == "" || user == "root" || strings.HasPrefix(user, "0") {
		t.Errorf("final stage runs as %q: want a non-root user", user)
	}
	// The build command, as written, with the output moved to a temporary
	// directory.
	var build string
	for _, l := range lines[:froms[len(froms)-1]] {
		if strings.HasPrefix(l, "RUN ") && strings.Contains(l, "go build") {
			build = l
		}
	}
	i := strings.Index(build, "CGO_ENABLED=0 go build")
	if i < 0 {
		t.Fatalf("no `CGO_ENABLED=0 go build` in the build stage: %q", build)
	}
	cmdline := build[i:]
	m := regexp.MustCompile(`-o\s+(\S+)`).FindStringSubmatch(cmdline)
	if m == nil {
		t.Fatalf("build command %q has no -o", cmdline)
	}
	bin := filepath.Join(t.TempDir(), "weft")
	cmdline = strings.Replace(cmdline, m[0], "-o "+bin, 1)
	sh := exec.CommandContext(t.Context(), "sh", "-c", cmdline)
	sh.Dir = repoRoot
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmdline, err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary is dynamically linked (program header %v)", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries: %v", libs)
	}
	out, err := exec.CommandContext(t.Context(), bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "weft ") {
		t.Errorf("weft version: %q %v", out, err)
	}
}

func TestComposeFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type service struct {
		Image       string
		Build       any
		Command     []string
		Environment map[string]string
		Volumes     []string
		Profiles    []string
	}
	var c struct {
		Services map[string]service
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	var replicas []string
	for name, s := range c.Services {
		if s.Build != nil {
			replicas = append(replicas, name)
		}
	}
	slices.Sort(replicas)
	if len(replicas) != 2 {
		t.Fatalf("want two weft replicas built from the Dockerfile, got %v", replicas)
	}
	if pg := c.Services["postgres"].Image; !strings.Contains(pg, "pgvector") {
		t.Errorf("postgres image %q: want one with pgvector", pg)
	}
	if r := c.Services["redis"].Image; !strings.HasPrefix(r, "redis:") {
		t.Errorf("redis image %q", r)
	}
	a, b := c.Services[replicas[0]], c.Services[replicas[1]]
	for _, s := range []service{a, b} {
		env := s.Environment
		if !strings.Contains(env["WEFT_POSTGRES_URL"], "@postgres:5432/") || !strings.Contains(env["WEFT_REDIS_URL"], "//redis:6379") {
			t.Errorf("a replica does not use the postgres and redis services: %v", env)
		}
		// The command is one weft accepts.
		if r := runCLI(t, t.Context(), nil, "", append(slices.Clone(s.Command), "--help")...); r.code != 0 {
			t.Errorf("command %v: code %d stderr %q", s.Command, r.code, r.stderr)
		}
		for _, v := range s.Volumes {
			src, dst, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, "./") && slices.Contains(s.Command, strings.TrimSuffix(dst, ":ro")) {
				if _, err := config.Load(filepath.Join(repoRoot, src), nil); err != nil {
					t.Errorf("the mounted configuration %s: %v", src, err)
				}
			}
		}
	}
	for _, k := range []string{"WEFT_ADMIN_KEY", "WEFT_SECRET_KEY", "WEFT_POSTGRES_URL", "WEFT_REDIS_URL"} {
		if a.Environment[k] == "" || a.Environment[k] != b.Environment[k] {
			t.Errorf("%s must be set and shared by both replicas: %q, %q", k, a.Environment[k], b.Environment[k])
		}
	}
	if a.Environment["WEFT_INSTANCE_ID"] == b.Environment["WEFT_INSTANCE_ID"] {
		t.Errorf("the replicas share WEFT_INSTANCE_ID %q", a.Environment["WEFT_INSTANCE_ID"])
	}
	// Monitoring: Prometheus scrapes both replicas; Grafana gets the dashboard.
	prom, err := os.ReadFile(filepath.Join(repoRoot, "deploy/prometheus/prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range replicas {
		if !strings.Contains(string(prom), r+":8080") {
			t.Errorf("prometheus.yml does not scrape %s", r)
		}
	}
	for _, v := range c.Services["grafana"].Volumes {
		src, _, _ := strings.Cut(v, ":")
		if _, err := os.Stat(filepath.Join(repoRoot, src)); err != nil {
			t.Errorf("grafana mounts %s: %v", src, err)
		}
	}
}
