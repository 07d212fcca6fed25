// Package all registers every model provider Weft ships. Import it for its
// side effect when a program should accept any "provider/model" name:
//
//	import _ "github.com/weftlabs/weft/provider/all"
package all

import (
	// Each import registers its providers with package provider in init.
	_ "github.com/weftlabs/weft/provider/anthropic"
	_ "github.com/weftlabs/weft/provider/ollama"
	_ "github.com/weftlabs/weft/provider/openai"
	_ "github.com/weftlabs/weft/provider/scripted"
)
