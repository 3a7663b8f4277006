//go:build tools

// Package tools pins the command `make compose` builds (github.com/docker/compose/v2/cmd).
package tools
