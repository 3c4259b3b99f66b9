package runtime

import (
	"reflect"
	"testing"
)

func TestSamplingApply(t *testing.T) {
	declared := func() ModelRequest {
		return ModelRequest{Temperature: new(0.3), TopP: new(0.9), MaxTokens: 100, Seed: new(int64(7))}
	}
	tests := []struct {
		name string
		base ModelRequest
		s    *Sampling
		want ModelRequest
	}{
		{"nil keeps the declaration", declared(), nil, declared()},
		{"empty keeps the declaration", declared(), &Sampling{}, declared()},
		{"values replace, max_tokens lowers", declared(),
			&Sampling{Temperature: new(0.0), TopP: new(0.1), MaxTokens: 20, Stop: []string{"x"}, Seed: new(int64(0))},
			ModelRequest{Temperature: new(0.0), TopP: new(0.1), MaxTokens: 20, Stop: []string{"x"}, Seed: new(int64(0))}},
		{"max_tokens above the declared cap", declared(), &Sampling{MaxTokens: 500}, declared()},
		{"max_tokens without a declared cap", ModelRequest{}, &Sampling{MaxTokens: 500}, ModelRequest{MaxTokens: 500}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.base
			tt.s.apply(&got)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
