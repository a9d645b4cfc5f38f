// The apf-oracle (main.go): the module root; the module files it is built
// with, one per k8s.io/apiserver release, are releases/*.mod.
module github.com/kubectl-apf/kubectl-apf/hack/apf-oracle

go 1.24
