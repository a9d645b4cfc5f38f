package fetch

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReaderRBACComment says what each rule of ReaderRole grants, in its
// order: the comment "kubectl apf rbac" prints above the objects.
const ReaderRBACComment = `# A read-only ClusterRole for kubectl apf; nothing in it writes. Its rules:
# 1. the APF debug dumps and the metrics (kubectl apf dump, top, bundle);
# 2. the APF configuration (names for UIDs, explain, lint);
# 3. the apiserver instances, for --all-apiservers.
`

// ReaderRole is the smallest ClusterRole that grants every GET this
// package sends (rbacRule names each): the three dumps and /metrics, the
// FlowSchemas and PriorityLevelConfigurations, and the EndpointSlices of
// --all-apiservers.
func ReaderRole(name string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{
			{NonResourceURLs: []string{DebugURLPattern, "/metrics"}, Verbs: []string{"get"}},
			{APIGroups: []string{"flowcontrol.apiserver.k8s.io"}, Resources: []string{"flowschemas", "prioritylevelconfigurations"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list"}},
		},
	}
}

// ReaderBinding binds the ClusterRole of ReaderRole(name) to users,
// groups and service accounts (namespace and name each).
func ReaderBinding(name string, users, groups []string, serviceAccounts [][2]string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   subjects(users, groups, serviceAccounts),
	}
}

// StoreProxyComment says what StoreProxyRole grants, printed above it.
const StoreProxyComment = `# The metrics or log store read through the apiserver's service proxy
# (--prometheus-service, --victorialogs-service): get on services/proxy of
# that Service alone, in its namespace.
`

// StoreProxyRole is the Role, in namespace, that lets the kubectl identity
// read the stores of services (NAME:PORT each, as the proxy's path names
// them, and so RBAC's resourceNames) through the apiserver's service
// proxy: get on services/proxy, which a GET through the proxy needs.
func StoreProxyRole(name, namespace string, services []string) *rbacv1.Role {
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"services/proxy"}, ResourceNames: services, Verbs: []string{"get"}}},
	}
}

// StoreProxyBinding binds the Role of StoreProxyRole(name, namespace) to
// users, groups and service accounts.
func StoreProxyBinding(name, namespace string, users, groups []string, serviceAccounts [][2]string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   subjects(users, groups, serviceAccounts),
	}
}

func subjects(users, groups []string, serviceAccounts [][2]string) []rbacv1.Subject {
	var out []rbacv1.Subject
	for _, u := range users {
		out = append(out, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u})
	}
	for _, g := range groups {
		out = append(out, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: g})
	}
	for _, sa := range serviceAccounts {
		out = append(out, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: sa[0], Name: sa[1]})
	}
	return out
}
