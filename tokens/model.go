package tokens

import "strings"

// ForModel returns the counter for a model name: the exact encoding for
// OpenAI's models, the Estimator for every other model. A "provider/" prefix
// ("openai/gpt-4o-mini") and a fine-tuning prefix ("ft:gpt-4o-mini:org::id")
// are ignored, and so is case.
//
//   - o200k_base: gpt-4o*, chatgpt-4o*, gpt-4.1*, gpt-4.5*, gpt-5*, gpt-oss*,
//     and the o1, o3 and o4 families;
//   - cl100k_base: the other gpt-4*, gpt-3.5* (and Azure's gpt-35*),
//     text-embedding-3-*, text-embedding-ada-002.
func ForModel(model string) Counter {
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	if hasPrefixFold(model, "ft:") {
		model = model[len("ft:"):]
	}
	for _, p := range []string{"gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "gpt-oss"} {
		if hasPrefixFold(model, p) {
			return O200K()
		}
	}
	for _, p := range []string{"o1", "o3", "o4"} {
		if hasPrefixFold(model, p) && (len(model) == len(p) || model[len(p)] == '-') {
			return O200K()
		}
	}
	for _, p := range []string{"gpt-4", "gpt-3.5", "gpt-35", "text-embedding-3-", "text-embedding-ada-002"} {
		if hasPrefixFold(model, p) {
			return CL100K()
		}
	}
	return Estimator{}
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
