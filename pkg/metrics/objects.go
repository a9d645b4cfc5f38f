package metrics

// ObjectCount is one resource's object count and total size as the
// apiserver's object count tracker last saw them; -1 means the tracker
// failed to count.
type ObjectCount struct {
	Count float64
	// Bytes is the estimated total size (count × average object size), 0
	// when the release does not export it.
	Bytes float64
}

// ObjectCounts returns the object counts per resource, keyed like
// upstream's tracker by GroupResource.String() ("pods",
// "deployments.apps"): from apiserver_resource_objects{group,resource}
// (1.34+) or else from the deprecated apiserver_storage_objects{resource},
// whose label already has that form. The sizes come from
// apiserver_resource_size_estimate_bytes. Nil when the scrape has neither
// count family.
func ObjectCounts(s *Scrape) map[string]ObjectCount {
	key := func(l map[string]string) string {
		if g := l["group"]; g != "" {
			return l["resource"] + "." + g
		}
		return l["resource"]
	}
	out := map[string]ObjectCount{}
	if samples := s.Samples(FamilyResourceObjects); len(samples) > 0 {
		for _, sm := range samples {
			out[key(sm.Labels)] = ObjectCount{Count: sm.Value}
		}
	} else if samples := s.Samples(FamilyStorageObjects); len(samples) > 0 {
		for _, sm := range samples {
			out[sm.Labels["resource"]] = ObjectCount{Count: sm.Value}
		}
	} else {
		return nil
	}
	for _, sm := range s.Samples(FamilyResourceSizeBytes) {
		k := key(sm.Labels)
		if c, ok := out[k]; ok {
			c.Bytes = sm.Value
			out[k] = c
		}
	}
	return out
}

// AverageSize is the average object size in bytes the tracker used (its
// total is count × average, both integers), 0 when unknown.
func (c ObjectCount) AverageSize() int64 {
	if c.Count <= 0 || c.Bytes <= 0 {
		return 0
	}
	return int64(c.Bytes) / int64(c.Count)
}
