package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print weft's version and the Go version it was built with",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintln(e.stdout, versionString())
			return nil
		},
	}
}

// versionString describes the build: the module version (or "(devel)"),
// the VCS revision when the binary was built from a checkout, the Go
// version and the platform.
func versionString() string {
	version, rev, modified := "(unknown)", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && modified {
		rev += "+modified"
	}
	s := "weft " + version
	if rev != "" {
		s += " (" + rev + ")"
	}
	return fmt.Sprintf("%s %s %s/%s", s, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
