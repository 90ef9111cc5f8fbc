package checks

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// TestRenderedObjectsDecodeStrictly decodes every rendered built-in object into its Kubernetes
// API type with unknown fields refused: a misspelled or misplaced field (which the API server
// would drop, or reject under strict field validation) fails here. The custom resources
// (ServiceMonitor, ScaledObject) are checked for their API group and required fields.
func TestRenderedObjectsDecodeStrictly(t *testing.T) {
	for _, vf := range valueSets(t) {
		t.Run(filepath.Base(vf), func(t *testing.T) {
			out, err := render(t, vf)
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range manifests(t, out) {
				kind, _ := doc["kind"].(string)
				var obj any
				switch kind {
				case "Deployment":
					obj = &appsv1.Deployment{}
				case "Service":
					obj = &corev1.Service{}
				case "ConfigMap":
					obj = &corev1.ConfigMap{}
				case "ServiceAccount":
					obj = &corev1.ServiceAccount{}
				case "PodDisruptionBudget":
					obj = &policyv1.PodDisruptionBudget{}
				case "ServiceMonitor":
					checkCustom(t, doc, "monitoring.coreos.com/v1", "selector", "endpoints")
					continue
				case "ScaledObject":
					checkCustom(t, doc, "keda.sh/v1alpha1", "scaleTargetRef", "triggers", "maxReplicaCount")
					continue
				default:
					t.Errorf("unexpected kind %q rendered", kind)
					continue
				}
				raw, err := json.Marshal(doc)
				if err != nil {
					t.Fatal(err)
				}
				dec := json.NewDecoder(bytes.NewReader(raw))
				dec.DisallowUnknownFields()
				if err := dec.Decode(obj); err != nil {
					t.Errorf("%s does not decode as a Kubernetes %s: %v", kind, kind, err)
				}
			}
		})
	}
}

func checkCustom(t *testing.T, doc map[string]any, apiVersion string, specFields ...string) {
	t.Helper()
	if doc["apiVersion"] != apiVersion {
		t.Errorf("%s has apiVersion %v, want %s", doc["kind"], doc["apiVersion"], apiVersion)
	}
	spec, _ := doc["spec"].(map[string]any)
	for _, f := range specFields {
		if spec[f] == nil {
			t.Errorf("%s has no spec.%s", doc["kind"], f)
		}
	}
}
