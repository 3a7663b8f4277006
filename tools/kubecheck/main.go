// Command kubecheck decodes Kubernetes manifests strictly into the API types of k8s.io/api, so that a
// misspelt or misplaced field, a wrong type or an unknown kind fails instead of being dropped by the
// API server. `make helm-check` pipes `helm template` into it:
//
//	helm template onceflow deploy/helm/onceflow | kubecheck -
//	kubecheck manifests.yaml ...
//
// For every YAML document (helm's "# Source:" comment names its template in the messages):
//  1. Read apiVersion and kind, and find the Go type registered for them (an unknown kind fails).
//  2. Decode the document into that type with sigs.k8s.io/yaml's UnmarshalStrict: unknown and
//     duplicate fields fail.
//  3. Check metadata.name (a DNS subdomain; a DNS label for Services) and the labels' syntax.
//
// Prints one line per manifest, "ok KIND NAME", and every problem; exits 1 when there was one.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

var sourceComment = regexp.MustCompile(`(?m)^# Source: (.+)$`)

func newScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, policyv1.AddToScheme,
		networkingv1.AddToScheme, rbacv1.AddToScheme, autoscalingv2.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	return scheme
}

// documents splits a YAML stream at its "---" lines, keeping the documents that hold more than comments.
func documents(r io.Reader) ([][]byte, error) {
	var docs [][]byte
	var current bytes.Buffer
	flush := func() {
		for _, line := range strings.Split(current.String(), "\n") {
			trimmed := strings.TrimSpace(line)
			if trimmed != "" && !strings.HasPrefix(trimmed, "#") {
				docs = append(docs, append([]byte(nil), current.Bytes()...))
				break
			}
		}
		current.Reset()
	}
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for scanner.Scan() {
		line := scanner.Text()
		if strings.TrimRight(line, " ") == "---" {
			flush()
			continue
		}
		current.WriteString(line)
		current.WriteByte('\n')
	}
	flush()
	return docs, scanner.Err()
}

// check decodes one manifest; it returns "KIND NAME" and the problems found.
func check(scheme *runtime.Scheme, doc []byte) (string, []string) {
	// Step 1
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return "?", []string{fmt.Sprintf("not a YAML object: %v", err)}
	}
	gv, err := schema.ParseGroupVersion(meta.APIVersion)
	if err != nil || meta.Kind == "" {
		return "?", []string{fmt.Sprintf("apiVersion %q / kind %q: not a Kubernetes object", meta.APIVersion, meta.Kind)}
	}
	gvk := gv.WithKind(meta.Kind)
	object, err := scheme.New(gvk)
	if err != nil {
		return meta.Kind, []string{fmt.Sprintf("%s: no such kind in k8s.io/api", gvk)}
	}
	// Step 2
	if err := yaml.UnmarshalStrict(doc, object); err != nil {
		return meta.Kind, []string{err.Error()}
	}
	// Step 3
	accessor, ok := object.(metav1.Object)
	if !ok {
		return meta.Kind, []string{"no metadata"}
	}
	name := accessor.GetName()
	var problems []string
	nameCheck := validation.IsDNS1123Subdomain
	if meta.Kind == "Service" {
		nameCheck = validation.IsDNS1123Label
	}
	for _, msg := range nameCheck(name) {
		problems = append(problems, fmt.Sprintf("metadata.name %q: %s", name, msg))
	}
	for key, value := range accessor.GetLabels() {
		for _, msg := range validation.IsQualifiedName(key) {
			problems = append(problems, fmt.Sprintf("label %q: %s", key, msg))
		}
		for _, msg := range validation.IsValidLabelValue(value) {
			problems = append(problems, fmt.Sprintf("label %s=%q: %s", key, value, msg))
		}
	}
	return meta.Kind + " " + name, problems
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kubecheck FILE|- ...")
		os.Exit(2)
	}
	scheme := newScheme()
	failed, checked := false, 0
	for _, path := range os.Args[1:] {
		var input io.Reader = os.Stdin
		if path != "-" {
			file, err := os.Open(path)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			defer file.Close()
			input = file
		}
		docs, err := documents(input)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			os.Exit(2)
		}
		for index, doc := range docs {
			where := fmt.Sprintf("%s document %d", path, index+1)
			if match := sourceComment.FindSubmatch(doc); match != nil {
				where = string(match[1])
			}
			what, problems := check(scheme, doc)
			checked++
			if len(problems) == 0 {
				fmt.Printf("ok %s (%s)\n", what, where)
				continue
			}
			failed = true
			for _, problem := range problems {
				fmt.Printf("FAIL %s (%s): %s\n", what, where, problem)
			}
		}
	}
	if checked == 0 {
		fmt.Println("FAIL no manifest in the input")
		failed = true
	}
	if failed {
		os.Exit(1)
	}
}
