package load

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		o       Options
		wantErr string
	}{
		{"default", Options{}, ""},
		{"urls", Options{APIServerURLs: []string{"https://10.0.0.1:6443", "https://10.0.0.2:6443"}}, ""},
		{"from and all", Options{From: "b", AllAPIServers: true}, "mutually exclusive"},
		{"all and urls", Options{AllAPIServers: true, APIServerURLs: []string{"https://a:1"}}, "mutually exclusive"},
		{"bad url", Options{APIServerURLs: []string{"10.0.0.1:6443"}}, `--apiserver-urls: "10.0.0.1:6443" is not a URL`},
		// --defaults with --from: the defaults of the input's release (issue 47, R6).
		{"defaults and from", Options{Defaults: true, From: "b"}, ""},
		{"defaults and all", Options{Defaults: true, AllAPIServers: true}, "read live apiservers: drop --defaults"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
