// Package model holds the model providers of the runtime: the scripted model
// and scripted tool that replay YAML fixtures (spec/fixtures.md), and the
// OpenAI-compatible chat-completions provider. Every failure is a *vm.Error
// whose kind (rate_limit, unavailable, timeout, model_error, ...) node retry
// policies and catch routes can match; spec/models.md describes the mapping.
package model
