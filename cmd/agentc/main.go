// Command agentc compiles, checks, formats, runs and serves .agent workflows.
package main

import "os"

func main() { os.Exit(run(os.Args[1:])) }
