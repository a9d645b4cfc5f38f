package explain

import (
	"encoding/json"
	"testing"
	"time"
)

// TestLogTimeJSON: a time whose year the log told is RFC 3339; one whose
// year it did not is written without it, never with the readers' default
// year, and both read back as written.
func TestLogTimeJSON(t *testing.T) {
	at := time.Date(2000, time.March, 5, 22, 40, 41, 965396684, time.UTC)
	for _, tt := range []struct {
		in   LogTime
		want string
	}{
		{LogTime{Time: at.AddDate(25, 0, 0), YearKnown: true}, `"2025-03-05T22:40:41.965396684Z"`},
		{LogTime{Time: at}, `"--03-05T22:40:41.965396684Z"`},
	} {
		b, err := json.Marshal(tt.in)
		if err != nil || string(b) != tt.want {
			t.Errorf("%+v: %s, %v; want %s", tt.in, b, err, tt.want)
			continue
		}
		var back LogTime
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back.YearKnown != tt.in.YearKnown || back.Time.Format("01-02T15:04:05.999999999") != tt.in.Time.Format("01-02T15:04:05.999999999") {
			t.Errorf("%s read back as %+v", b, back)
		}
	}
	var lt LogTime
	if err := json.Unmarshal([]byte(`"yesterday"`), &lt); err == nil {
		t.Errorf("a time in no form was read: %+v", lt)
	}
}
