//go:build !unix

package vector_test

import "time"

// cpuTime is not measured here; benchmarks report only wall-clock rates.
func cpuTime() time.Duration { return 0 }
