package tokens

//go:generate go run ./internal/gen -out data
