# syntax=docker/dockerfile:1
# Weft in a container: a static binary (no cgo: the embedded SQLite is pure
# Go) on a distroless base, running as a non-root user.
#
#   docker build -t weft .
#   docker run -p 8080:8080 -e WEFT_ADMIN_KEY=... weft
#
# cmd/weft/container_test.go runs this file's build command and checks that
# it yields a static binary, and checks the stages below.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/weft ./cmd/weft
# The data directory, owned by the runtime user (distroless has no shell to make it).
RUN mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/weft /usr/local/bin/weft
COPY --from=build --chown=65532:65532 /out/data /var/lib/weft
USER 65532:65532
WORKDIR /var/lib/weft
VOLUME ["/var/lib/weft"]
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/weft"]
CMD ["serve", "--addr", "0.0.0.0:8080", "--data", "/var/lib/weft"]
