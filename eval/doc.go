// Package eval runs test suites against Weft agents and workflows: the
// library behind `weft eval run` and the helper that runs a suite as
// `go test` subtests.
//
// A [Suite] is a list of cases, each one or several turns with an agent
// (or one run of a workflow) and what each answer must satisfy: its text
// (exact, contains, regular expressions, not), its JSON (a schema, a
// subset, numbers within a tolerance), the tool trajectory (exact, in
// order, any order; arguments exact or a subset), the documents it cites,
// refusal, a judge model's score on a rubric, ROUGE-1 against a
// reference, latency and cost ceilings. A case may run several times and
// pass when all runs pass (pass^k) or one does (pass@k), and mock the
// tools it calls. Suites are YAML or JSON files validated by [SchemaJSON];
// [Load] reads one and names the file, line and field of a mistake.
//
// A suite runs against a [Target]: a Weft server through its Go client
// ([ClientTarget]), or a server started in the process from a
// configuration file (package eval/inproc), whose model calls go through
// [Cassettes] — recorded once, then replayed offline in CI.
package eval
