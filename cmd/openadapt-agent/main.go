// Command openadapt-agent is the agent-facing toolchain for OpenAdapt workflow
// bundles: a governed local stdio MCP server, the Agent Skills family, offline
// ledger verification and bundle verification. See the cmd package.
package main

import (
	"os"

	"github.com/OpenAdaptAI/openadapt-agent/cmd"
)

func main() { os.Exit(cmd.Main()) }
