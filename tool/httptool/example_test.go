package httptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/weftlabs/weft/netguard"
	"github.com/weftlabs/weft/tool/httptool"
)

func ExampleNew() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /weather/{city}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"city":%q,"units":%q,"temp":21}`, r.PathValue("city"), r.URL.Query().Get("units"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// The test server is on loopback, which the outbound guard refuses
	// unless allowed.
	guard, err := netguard.New(netguard.WithAllow("127.0.0.1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	weather, err := httptool.New(httptool.Config{
		Name:        "weather",
		Description: "Current weather of a city.",
		URL:         srv.URL + "/weather/{city}",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"units":{"enum":["C","F"]}},"required":["city"]}`),
	}, httptool.WithGuard(guard))
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := weather.Call(context.Background(), json.RawMessage(`{"city":"Oslo","units":"C"}`))
	fmt.Println(res.Content, err)
	// Output: {"city":"Oslo","units":"C","temp":21} <nil>
}
