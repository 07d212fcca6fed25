package toolname_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/toolname"
)

func TestSanitize(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 70)
	cases := []struct{ in, want string }{
		{"get_weather", "get_weather"},
		{"get-weather-2", "get-weather-2"},
		{"", "tool"},
		{"get weather", "get_weather"},
		{"fs.read/file", "fs_read_file"},
		{"héllo", "h_llo"},
		{"日本", "__"},
		{strings.Repeat("b", 64), strings.Repeat("b", 64)},
	}
	for _, c := range cases {
		if got := toolname.Sanitize(c.in); got != c.want {
			t.Errorf("Sanitize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	a, b := toolname.Sanitize(long), toolname.Sanitize(long+"b")
	if len(a) != 64 || len(b) != 64 || a == b {
		t.Errorf("long names: %q, %q: want distinct 64-byte names", a, b)
	}
	if !strings.HasPrefix(a, strings.Repeat("a", 55)+"_") {
		t.Errorf("long name %q lost its prefix", a)
	}
	if toolname.Sanitize(long) != a {
		t.Error("Sanitize is not deterministic")
	}
}

func TestJoin(t *testing.T) {
	t.Parallel()
	if got := toolname.Join("github", "create issue"); got != "github_create_issue" {
		t.Errorf("Join = %q", got)
	}
	if got := toolname.Join("", "x.y"); got != "x_y" {
		t.Errorf("Join without prefix = %q", got)
	}
	long := toolname.Join(strings.Repeat("p", 40), strings.Repeat("n", 40))
	if !tool.ValidName(long) {
		t.Errorf("Join of long parts = %q, invalid", long)
	}
}

func TestUnique(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 64)
	cases := []struct {
		in, want []string
	}{
		{nil, []string{}},
		{[]string{"a", "b"}, []string{"a", "b"}},
		{[]string{"a", "a", "a"}, []string{"a", "a_2", "a_3"}},
		{[]string{"a", "a", "a_2"}, []string{"a", "a_3", "a_2"}},
		{[]string{"a b", "a_b"}, []string{"a_b", "a_b_2"}},
		{[]string{long, long}, []string{long, strings.Repeat("x", 62) + "_2"}},
	}
	for _, c := range cases {
		got := toolname.Unique(c.in)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("Unique(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"", "a", "a b", strings.Repeat("é", 40), "\xff\xfe"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		n := toolname.Sanitize(a)
		if !tool.ValidName(n) {
			t.Fatalf("Sanitize(%q) = %q, invalid", a, n)
		}
		if tool.ValidName(a) && n != a {
			t.Fatalf("Sanitize changed valid name %q to %q", a, n)
		}
		u := toolname.Unique([]string{a, b, a, n})
		seen := map[string]bool{}
		for _, x := range u {
			if !tool.ValidName(x) || seen[x] {
				t.Fatalf("Unique(%q, %q) = %q: invalid or duplicate", a, b, u)
			}
			seen[x] = true
		}
	})
}

func ExampleSanitize() {
	fmt.Println(toolname.Sanitize("files/read file"))
	fmt.Println(toolname.Join("github", "issues.create"))
	// Output:
	// files_read_file
	// github_issues_create
}

func ExampleUnique() {
	fmt.Println(toolname.Unique([]string{"search", "search", "lookup"}))
	// Output: [search search_2 lookup]
}
