package testcluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// StartT starts a control plane for one test, in a directory of its own, and
// stops it when the test ends. When the test failed, the tail of every process's
// log is printed.
func StartT(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("the local control plane does not run with -short")
	}
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("starting the local control plane: %v", err)
	}
	t.Logf("local control plane up in %s at %s (data in %s)", time.Since(start).Round(time.Millisecond), c.URL(), c.Dir)
	t.Cleanup(func() {
		if t.Failed() {
			for _, a := range c.APIServers {
				t.Logf("--- last lines of %s ---\n%s", a.LogFile, Tail(a.LogFile, 40))
			}
			if c.Etcd != nil {
				t.Logf("--- last lines of %s ---\n%s", c.Etcd.LogFile, Tail(c.Etcd.LogFile, 20))
			}
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the local control plane: %v", err)
		}
	})
	return c
}

// Client returns a clientset for the named user on the primary apiserver.
func (c *Cluster) Client(user string) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(c.RESTConfig(user))
}

// ServiceAccountToken creates namespace ns and service account name when they
// do not exist and returns a token for it from the TokenRequest API.
func (c *Cluster) ServiceAccountToken(ctx context.Context, ns, name string) (string, error) {
	cs := c.Client(Admin)
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	_, err = cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating service account %s/%s: %w", ns, name, err)
	}
	expiry := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for %s/%s: %w", ns, name, err)
	}
	return tr.Status.Token, nil
}
