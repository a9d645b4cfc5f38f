package main

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// namesByUID maps the UIDs of the configuration objects to their names.
func namesByUID(fss []*flowcontrolv1.FlowSchema, pls []*flowcontrolv1.PriorityLevelConfiguration) map[string]string {
	m := map[string]string{}
	for _, fs := range fss {
		if fs.UID != "" {
			m[string(fs.UID)] = fs.Name
		}
	}
	for _, pl := range pls {
		if pl.UID != "" {
			m[string(pl.UID)] = pl.Name
		}
	}
	return m
}
