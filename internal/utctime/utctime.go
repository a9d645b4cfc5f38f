// Package utctime parses the one form of time the apiserver writes, in its
// debug dumps and its audit events alike: Go's RFC 3339 in UTC
// (2006-01-02T15:04:05.999999999Z, with 1 to 9 digits of fraction or none),
// by hand, as time.Parse(time.RFC3339Nano, s) reads it, at a fraction of
// its cost. It imports the standard library alone.
package utctime

import "time"

// zero is how the apiserver writes a zero time (a waiting request's
// StartTime in a dump).
const zero = "0001-01-01T00:00:00Z"

// Cache is the date of the last time parsed and its day count: a log's or
// a dump's times are mostly of one day, and the day count is the costly
// part. The zero Cache is empty.
type Cache struct {
	date [10]byte // "2006-01-02"
	days int64
	ok   bool
}

// Parse is ParseCached without a cache.
func Parse[S ~string | ~[]byte](s S) (time.Time, bool) { return ParseCached(nil, s) }

// ParseCached parses s as time.Parse(time.RFC3339Nano, s) does when s is
// in the apiserver's form, remembering its date in c when c is not nil. Any
// other form, or a field out of range, is not ok (and left to time.Parse or
// time.Time's UnmarshalJSON, which then accept or refuse it).
func ParseCached[S ~string | ~[]byte](c *Cache, s S) (time.Time, bool) {
	if len(s) == len(zero) && string(s) == zero {
		return time.Time{}, true
	}
	// 2006-01-02T15:04:05Z: 20 bytes; with a fraction, 22 to 30
	if len(s) < 20 || len(s) > 30 || s[len(s)-1] != 'Z' || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	num := func(from, to int) int {
		n := 0
		for i := from; i < to; i++ {
			d := s[i] - '0'
			if d > 9 {
				return -1
			}
			n = n*10 + int(d)
		}
		return n
	}
	var days int64
	if c != nil && c.ok && string(s[:10]) == string(c.date[:]) {
		days = c.days
	} else {
		year, month, day := num(0, 4), num(5, 7), num(8, 10)
		if year < 0 || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) {
			return time.Time{}, false
		}
		days = DaysSinceEpoch(year, month, day)
		if c != nil {
			copy(c.date[:], s[:10])
			c.days, c.ok = days, true
		}
	}
	hour, minute, sec := num(11, 13), num(14, 16), num(17, 19)
	if hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if frac := s[19 : len(s)-1]; len(frac) > 0 {
		// a dot and 1 to 9 digits
		if len(frac) < 2 || frac[0] != '.' {
			return time.Time{}, false
		}
		if nsec = num(20, len(s)-1); nsec < 0 {
			return time.Time{}, false
		}
		for range 10 - len(frac) {
			nsec *= 10
		}
	}
	// time.Date's result, without its normalisation (the fields are in
	// range) and its zone lookup (UTC): seconds since the epoch.
	return time.Unix(days*86400+int64(hour*3600+minute*60+sec), int64(nsec)).UTC(), true
}

// DaysSinceEpoch is the number of days from 1970-01-01 to the date
// (proleptic Gregorian; Howard Hinnant's days_from_civil).
func DaysSinceEpoch(year, month, day int) int64 {
	y := int64(year)
	if month <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	m := int64(month)
	if m > 2 {
		m -= 3
	} else {
		m += 9
	}
	doy := (153*m+2)/5 + int64(day) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// daysIn is the number of days of month in year (proleptic Gregorian).
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
