package a2a

import (
	"bytes"
	"context"
	"encoding/json"
)

// ArtifactRequest is what a completed task's artifacts are made from.
type ArtifactRequest struct {
	App, User, Context, Task, Run string
	// Output is the run's output (run_finished.output): the runnable's
	// output field, JSON; empty when the run produced none.
	Output json.RawMessage
}

// ArtifactFunc turns a completed run into the task's artifacts. It is the
// extension point for the artifact service (runtime/artifact): a function
// that also lists the files the run saved and returns them as url or raw
// parts. The default is OutputArtifacts.
type ArtifactFunc func(ctx context.Context, req ArtifactRequest) ([]Artifact, error)

// OutputArtifacts returns the run's output as one artifact "output": a
// text part when the output is a JSON string, else a data part
// (application/json). A run without output has no artifact.
func OutputArtifacts(_ context.Context, req ArtifactRequest) ([]Artifact, error) {
	out := bytes.TrimSpace(req.Output)
	if len(out) == 0 || string(out) == "null" {
		return nil, nil
	}
	var part Part
	var s string
	if out[0] == '"' && json.Unmarshal(out, &s) == nil {
		part = TextPart(s)
	} else {
		part = DataPart(json.RawMessage(out))
	}
	return []Artifact{{ArtifactID: "output", Name: "output", Description: "The output of run " + req.Run, Parts: []Part{part}}}, nil
}
