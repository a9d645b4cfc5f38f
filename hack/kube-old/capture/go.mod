// Standard-library-only program that starts an older kube-apiserver binary on
// loopback and captures its APF debug dumps, idle and under load.
module github.com/kubectl-apf/kubectl-apf/hack/kube-old/capture

go 1.24
