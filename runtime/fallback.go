package runtime

import (
	"context"
	"errors"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/vm"
)

// Model fallback (spec/language.md §5, "Fallback"): an llm agent's call
// that fails with unavailable or rate_limit — after the provider's own
// retries, and before any text of the reply was streamed — is made again
// with the next model of the agent's fallback list (its own `fallback`,
// else its model's). The model_response names the model that answered and
// carries that model's cost.

// fallbackModel is one model of an agent's fallback list.
type fallbackModel struct {
	name  string
	model Model
	price *Price
}

// fallbackRefs is the fallback list of program agent ag: its own
// `fallback` attribute, else its model's.
func fallbackRefs(p *bytecode.Program, ag *bytecode.Agent) []bytecode.Ref {
	if at, ok := bytecode.FindAttr(ag.Attrs, "fallback"); ok {
		return at.Refs
	}
	if ag.Model >= 0 && int(ag.Model) < len(p.Models) {
		if at, ok := bytecode.FindAttr(p.Models[ag.Model].Attrs, "fallback"); ok {
			return at.Refs
		}
	}
	return nil
}

// bindFallbacks resolves agent ai's fallback models against the configured
// ones; a missing one is reported through need.
func (pr *program) bindFallbacks(ai *agentInfo, models map[string]Model, need func(string)) {
	p := pr.prog
	for _, ref := range fallbackRefs(p, ai.decl) {
		if ref.Kind != bytecode.RefModel || int(ref.Index) >= len(p.Models) || int32(ref.Index) == ai.decl.Model {
			continue
		}
		md := &p.Models[ref.Index]
		m := models[md.Name]
		if m == nil {
			need(md.Name)
			continue
		}
		ai.fallbacks = append(ai.fallbacks, fallbackModel{name: md.Name, model: m, price: priceOf(p, md)})
	}
}

// fallsBack reports whether a failed call moves to the next model.
func fallsBack(err error) bool {
	var ve *vm.Error
	return errors.As(err, &ve) && (ve.Kind == vm.KindUnavailable || ve.Kind == vm.KindRateLimit)
}

// generate makes one model call of agent ag: its model, then each
// fallback in turn while the call fails with unavailable or rate_limit and
// nothing was streamed. It returns the reply and the price of the model
// that gave it.
func (h *host) generate(ctx context.Context, c *callCtx, ag *agentInfo, req *ModelRequest, onDelta func(string)) (*ModelResponse, *Price, error) {
	if len(ag.fallbacks) == 0 {
		resp, err := ag.model.Generate(ctx, req, onDelta)
		return resp, ag.price, err
	}
	streamed := false
	track := func(s string) {
		if s != "" {
			streamed = true
		}
		onDelta(s)
	}
	resp, err := ag.model.Generate(ctx, req, track)
	price, from := ag.price, ag.model.Info().Name
	for _, fb := range ag.fallbacks {
		if err == nil || streamed || ctx.Err() != nil || !fallsBack(err) {
			break
		}
		h.a.r.log.Warn("runtime: model call failed; falling back", "agent", ag.decl.Name, "run", c.run, "node", c.node,
			"model", from, "fallback", fb.name, "err", err)
		resp, err = fb.model.Generate(ctx, req, track)
		price, from = fb.price, fb.name
	}
	return resp, price, err
}
