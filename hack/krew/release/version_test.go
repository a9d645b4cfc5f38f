package release

import (
	"strings"
	"testing"
	"time"
)

func TestVersionFromDescribe(t *testing.T) {
	tests := []struct {
		name     string
		describe string
		want     string
		wantErr  string
	}{
		{"tag", "v0.1.0", "v0.1.0", ""},
		{"tag with newline", "v0.1.0\n", "v0.1.0", ""},
		{"after tag", "v0.1.0-3-gabc1234", "v0.1.0-3-gabc1234", ""},
		{"dirty tag", "v0.1.0-dirty", "v0.1.0-dirty", ""},
		{"prerelease tag", "v1.2.3-rc.1-2-g0abc123-dirty", "v1.2.3-rc.1-2-g0abc123-dirty", ""},
		{"no tag", "abc1234", "v0.0.0-abc1234", ""},
		{"no tag dirty", "abc1234-dirty", "v0.0.0-abc1234-dirty", ""},
		{"numeric hash", "1234567", "v0.0.0-1234567", ""},
		// A numeric prerelease identifier may not have a leading zero.
		{"numeric hash with leading zero", "0123456", "v0.0.0-g0123456", ""},
		{"hash with leading zero and a letter", "0123abc", "v0.0.0-0123abc", ""},
		{"empty", "", "", "empty git describe output"},
		{"tag that is not semver", "v1.2", "", "not a semantic version"},
		{"tag without v", "1.2.3", "", "neither a v-prefixed tag nor an abbreviated commit"},
		{"junk", "release-candidate", "", "neither a v-prefixed tag"},
		{"uppercase hash", "ABC1234", "", "neither"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := VersionFromDescribe(tt.describe)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("VersionFromDescribe(%q) = %q, %v; want error containing %q", tt.describe, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("VersionFromDescribe(%q) = %q, %v; want %q", tt.describe, got, err, tt.want)
			}
			if !IsKrewVersion(got) {
				t.Errorf("%q is not a version krew accepts", got)
			}
		})
	}
}

func TestIsKrewVersion(t *testing.T) {
	tests := []struct {
		v    string
		want bool
	}{
		{"v0.1.0", true},
		{"v1.37.1-rc.0+build.5", true},
		{"0.1.0", false}, // krew requires the v (internal/installation/semver.Parse)
		{"v0.1", false},
		{"v01.1.0", false},
		{"v0.0.0-0123", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsKrewVersion(tt.v); got != tt.want {
			t.Errorf("IsKrewVersion(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func TestStampLDFlags(t *testing.T) {
	s := Stamp{Version: "v0.1.0", Commit: "abc", Date: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))}
	got := s.LDFlags()
	for _, want := range []string{"-X main.version=v0.1.0", "-X main.commit=abc", "-X main.buildDate=2026-01-02T02:04:05Z"} {
		if !strings.Contains(got, want) {
			t.Errorf("LDFlags() = %q, missing %q", got, want)
		}
	}
}

// FuzzVersionFromDescribe: whatever git prints, the result is an error or a
// version krew accepts, never a panic.
func FuzzVersionFromDescribe(f *testing.F) {
	for _, s := range []string{"v0.1.0", "v0.1.0-3-gabc1234-dirty", "abc1234", "0123456-dirty", "", "v", "-dirty", "v1.2.3+x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := VersionFromDescribe(s)
		if err == nil && !IsKrewVersion(v) {
			t.Fatalf("VersionFromDescribe(%q) = %q, which krew would refuse", s, v)
		}
	})
}
