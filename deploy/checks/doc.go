// Package checks holds the deployment checks: the Helm chart (lint, golden renders, schema
// rejections, the rendered config passing config.Load and Validate), the Grafana dashboard and
// Prometheus alert rules against the daemon's metrics, and the compose file.
//
// It is a module of its own so that its test-only dependencies (Prometheus's rule and PromQL
// parsers, the compose loader) stay out of the daemon's go.mod. Run it with
// `cd deploy/checks && go test -count=1 ./...`; helm is built once per run from a pinned version
// through the Go toolchain, so nothing but Go is needed.
package checks
