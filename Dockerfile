# syntax=docker/dockerfile:1
#
# The sink image: a static binary on distroless, run as the nonroot user, no shell.
#   docker build --build-arg VERSION=$(git describe --tags --always) -t bucketsink/sink .
# The build stage runs on the build machine's platform and cross-compiles to the target's, so a
# multi-platform build (docker buildx build --platform linux/amd64,linux/arm64) needs no emulation.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Module downloads are their own layer: they change far less often than the source.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/sink ./cmd/sink

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/sink /sink
USER nonroot:nonroot
# Metrics, /healthz, /readyz and /debug/partitions (metrics.address).
EXPOSE 9464
ENTRYPOINT ["/sink"]
CMD ["run", "--config", "/etc/sink/config.yaml"]
