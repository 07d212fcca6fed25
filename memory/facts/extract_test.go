package facts

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseDecisions(t *testing.T) {
	t.Parallel()
	many := `{"operations": [` + strings.Repeat(`{"op": "add", "text": "x"},`, MaxDecisions+5) + `{"op": "add", "text": "y"}]}`
	tests := []struct {
		name   string
		answer string
		want   []Decision
		err    bool
	}{
		{"plain", `{"operations": [{"op": "add", "id": "", "text": " Lives in Berlin. "}, {"op": "update", "id": "2", "text": "Has two dogs."}, {"op": "delete", "id": "1", "text": ""}]}`,
			[]Decision{{Add, "", "Lives in Berlin."}, {Update, "2", "Has two dogs."}, {Delete, "1", ""}}, false},
		{"fenced, among prose", "Here you are:\n```json\n{\"operations\": [{\"op\": \"ADD\", \"text\": \"Likes tea.\"}]}\n```\nDone.",
			[]Decision{{Add, "", "Likes tea."}}, false},
		{"bracketed ids", `{"operations": [{"op": "none", "id": "[3]"}]}`, []Decision{{None, "3", ""}}, false},
		{"nothing to change", `{"operations": []}`, nil, false},
		{"invalid ones dropped", `{"operations": [{"op": "forget", "id": "1"}, {"op": "update", "id": "4", "text": "x"}, {"op": "update", "id": "01", "text": "x"},
			{"op": "delete", "id": "0"}, {"op": "add", "text": ""}, {"op": "update", "id": "1"}, 7, {"op": "delete", "id": "2"}, {"op": "update", "id": "2", "text": "twice"}]}`,
			[]Decision{{Delete, "2", ""}}, false},
		{"an add's id ignored", `{"operations": [{"op": "add", "id": "2", "text": "New."}]}`, []Decision{{Add, "", "New."}}, false},
		{"too many", many, nil, false},
		{"not json", "The user lives in Berlin.", nil, true},
		{"no operations", `{"facts": ["Lives in Berlin."]}`, nil, true},
		{"broken", `{"operations": [{"op": "add"`, nil, true},
		{"too long", `{"operations": [], "pad": "` + strings.Repeat("x", MaxAnswerBytes) + `"}`, nil, true},
	}
	for _, tt := range tests {
		got, err := parseDecisions(tt.answer, 3)
		if (err != nil) != tt.err {
			t.Errorf("%s: err = %v, want error %v", tt.name, err, tt.err)
			continue
		}
		if tt.name == "too many" {
			if len(got) != MaxDecisions {
				t.Errorf("too many: %d decisions, want %d", len(got), MaxDecisions)
			}
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// FuzzParseDecisions feeds the parser any answer: it never panics, refuses
// answers over MaxAnswerBytes, and returns at most MaxDecisions valid
// decisions, one per fact shown.
func FuzzParseDecisions(f *testing.F) {
	for _, s := range []string{
		`{"operations": [{"op": "add", "id": "", "text": "Lives in Berlin."}, {"op": "update", "id": "2", "text": "x"}]}`,
		"```json\n{\"operations\": [{\"op\": \"delete\", \"id\": \"[1]\"}]}\n```",
		`{"operations": null}`, `{}`, `{"operations": [1, "x", null, {"op": 5}]}`, "}{", "",
	} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, answer string, n int) {
		n = max(0, min(n, 100))
		got, err := parseDecisions(answer, n)
		if len(answer) > MaxAnswerBytes && err == nil {
			t.Fatalf("an answer of %d bytes was read", len(answer))
		}
		if err != nil {
			return
		}
		if len(got) > MaxDecisions {
			t.Fatalf("%d decisions", len(got))
		}
		seen := map[string]bool{}
		for _, d := range got {
			if !validDecision(d, n) || (d.Op == Add) != (d.ID == "") {
				t.Fatalf("invalid decision %+v of %q", d, answer)
			}
			if d.ID != "" {
				if seen[d.ID] {
					t.Fatalf("two decisions on fact %s", d.ID)
				}
				seen[d.ID] = true
			}
		}
	})
}
