package testcluster

import (
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"os"
	"strings"
)

// User is an identity the control plane authenticates by a static bearer token.
// kube-apiserver adds system:authenticated to every one of them.
type User struct {
	Name   string
	Groups []string
	Token  string
}

// Well-known user names of the local control plane.
const (
	// Admin is in system:masters, so its requests are exempt from APF.
	Admin = "admin"
	// LoadGroup is the group of the load generator's identities (load-1 ... load-N).
	LoadGroup = "apf-load"
)

// NumLoadUsers is how many load generator identities the control plane knows.
const NumLoadUsers = 8

// defaultUsers lists the identities every local control plane authenticates:
// an admin, plain users with groups, node identities, control-plane component
// users, and the load generator's identities. Service accounts are not listed:
// tests get their tokens through the TokenRequest API.
func defaultUsers() []User {
	users := []User{
		{Name: Admin, Groups: []string{"system:masters"}},
		{Name: "alice", Groups: []string{"dev"}},
		{Name: "bob", Groups: []string{"dev", "qa"}},
		{Name: "carol"},
		{Name: "monitor", Groups: []string{"apf-readers"}},
		{Name: "system:node:n1", Groups: []string{"system:nodes"}},
		{Name: "system:node:n2", Groups: []string{"system:nodes"}},
		{Name: "system:kube-controller-manager"},
		{Name: "system:kube-scheduler"},
		{Name: "system:kube-proxy"},
	}
	for i := 1; i <= NumLoadUsers; i++ {
		users = append(users, User{Name: LoadUserName(i), Groups: []string{LoadGroup}})
	}
	for i := range users {
		users[i].Token = randomToken()
	}
	return users
}

// LoadUserName is the name of the i-th load generator identity (1-based).
func LoadUserName(i int) string {
	return "load-" + itoa(i)
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

func randomToken() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b[:])
}

// writeTokenFile writes kube-apiserver's --token-auth-file: token,user,uid,"groups".
func writeTokenFile(path string, users []User) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	for _, u := range users {
		if err := w.Write([]string{u.Token, u.Name, "uid-" + u.Name, strings.Join(u.Groups, ",")}); err != nil {
			f.Close()
			return err
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
