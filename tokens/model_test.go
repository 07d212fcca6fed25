package tokens

import "testing"

func TestForModel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model string
		want  Counter
	}{
		{"gpt-4o", O200K()},
		{"gpt-4o-mini", O200K()},
		{"openai/gpt-4o-mini", O200K()},
		{"GPT-4o-2024-08-06", O200K()},
		{"chatgpt-4o-latest", O200K()},
		{"gpt-4.1-nano", O200K()},
		{"gpt-4.5-preview", O200K()},
		{"gpt-5", O200K()},
		{"gpt-5-mini", O200K()},
		{"gpt-oss-120b", O200K()},
		{"o1", O200K()},
		{"o1-mini", O200K()},
		{"o3-mini", O200K()},
		{"o4-mini", O200K()},
		{"ft:gpt-4o-mini:acme::abc123", O200K()},
		{"azure/openai/o3", O200K()},
		{"gpt-4", CL100K()},
		{"gpt-4-turbo", CL100K()},
		{"gpt-4-0613", CL100K()},
		{"gpt-3.5-turbo", CL100K()},
		{"gpt-35-turbo", CL100K()},
		{"ft:gpt-3.5-turbo:acme::x", CL100K()},
		{"text-embedding-3-small", CL100K()},
		{"openai/text-embedding-ada-002", CL100K()},
		{"o10", Estimator{}},
		{"o", Estimator{}},
		{"claude-sonnet-4", Estimator{}},
		{"anthropic/claude-3-5-haiku", Estimator{}},
		{"llama3.1:8b", Estimator{}},
		{"text-embedding-ada-001", Estimator{}},
		{"", Estimator{}},
	}
	for _, tt := range tests {
		if got := ForModel(tt.model); got != tt.want {
			t.Errorf("ForModel(%q) = %v, want %v", tt.model, name(got), name(tt.want))
		}
	}
}

func name(c Counter) string {
	if e, ok := c.(*Encoding); ok {
		return e.Name()
	}
	return "estimator"
}
