// Package memory is Weft's chat memory: conversations kept in a [Store]
// (in-process, SQL or Redis) and windows over them that decide what a model
// call sees.
package memory
