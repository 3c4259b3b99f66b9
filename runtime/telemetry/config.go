package telemetry

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// DefaultServiceName is service.name when OTEL_SERVICE_NAME is not set.
const DefaultServiceName = "agentc"

// Configure builds a tracer provider from the OTEL_* variables env looks
// up (spec/telemetry.md, "Configuration"): nil when tracing is off. The
// caller owns the provider and shuts it down (flushing its spans) after
// the Runner is closed. An unsupported exporter or protocol is an error.
func Configure(ctx context.Context, env func(string) (string, bool)) (*sdktrace.TracerProvider, error) {
	get := func(k string) string { v, _ := env(k); return strings.TrimSpace(v) }
	if strings.EqualFold(get("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	endpoint := get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	signal := endpoint != ""
	if !signal {
		endpoint = get("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	switch exp := get("OTEL_TRACES_EXPORTER"); exp {
	case "":
		if endpoint == "" {
			return nil, nil
		}
	case "none":
		return nil, nil
	case "otlp":
	default:
		return nil, fmt.Errorf("telemetry: OTEL_TRACES_EXPORTER=%q is not supported (otlp or none)", exp)
	}
	proto := get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = get("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exporter sdktrace.SpanExporter
	var err error
	switch proto {
	case "", "http/protobuf":
		var opts []otlptracehttp.Option
		if endpoint != "" {
			u := endpoint
			if !signal {
				u = strings.TrimSuffix(u, "/") + "/v1/traces"
			}
			opts = append(opts, otlptracehttp.WithEndpointURL(u))
		}
		exporter, err = otlptracehttp.New(ctx, opts...)
	case "grpc":
		var opts []otlptracegrpc.Option
		if endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(endpoint))
		}
		exporter, err = otlptracegrpc.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("telemetry: OTLP protocol %q is not supported (http/protobuf or grpc)", proto)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	name := get("OTEL_SERVICE_NAME")
	if name == "" {
		name = DefaultServiceName
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", name)))
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res)), nil
}
