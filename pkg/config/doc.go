// Package config is the APF configuration object model that every command
// shares: FlowSchemas and PriorityLevelConfigurations parsed from YAML or
// JSON (documents and lists, every served flowcontrol version converted to
// v1 and validated as kube-apiserver would), the overlay of -f objects over
// a base, the default objects of each release, who manages an object, and
// the callbacks (APIServices, webhooks) the input holds. It is pure: it
// takes bytes and objects and returns objects.
package config
