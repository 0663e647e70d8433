package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	k8ssched "github.com/egret-stream/egret/schedulers/kubernetes"
)

func kubernetesCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "kubernetes", Short: "Set up a Kubernetes namespace for egret"}
	var (
		ns, podSA, subject, kubeconfig, context string
		apply                                   bool
	)
	rbac := &cobra.Command{
		Use:   "rbac --subject user:NAME|group:NAME|serviceaccount:NS:NAME [--namespace NS] [--pod-service-account NAME] [--apply [--kubeconfig F] [--context C]]",
		Short: "Print (or apply) the RBAC objects that let a subject run topologies in a namespace",
		Long: `Prints a ServiceAccount for the pods (no token mounted, no rights: the daemons do
not call the API server; set egret.kubernetes.service.account to its name), the
Role egret-submitter with exactly the rights egret submit, kill, restart and
update use (statefulsets, services, configmaps, pods, events), and its
RoleBinding to the subject that runs egret. Pipe it to kubectl apply -f -, or
give --apply to create or update them with the kubeconfig's credentials.`,
		Args: exactArgs(0, "egret kubernetes rbac --namespace streaming --subject user:alice | kubectl apply -f -"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if subject == "" {
				return usagef("--subject is required: the user, group or service account that runs egret (user:NAME, group:NAME, serviceaccount:NS:NAME)")
			}
			sub, err := k8ssched.ParseSubject(subject)
			if err != nil {
				return usageError{err}
			}
			objs, err := k8ssched.RBAC(ns, podSA, sub)
			if err != nil {
				return usageError{err}
			}
			if !apply {
				y, err := objs.YAML()
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(y)
				return err
			}
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = kubeconfig
			rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
			if err != nil {
				return usagef("no usable kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config): %v", err)
			}
			client, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return usageError{err}
			}
			if err := objs.Apply(cmd.Context(), client); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "applied ServiceAccount %s, Role %s and RoleBinding %s in namespace %s\n", podSA, k8ssched.RoleName, k8ssched.RoleName, ns)
			return nil
		},
	}
	f := rbac.Flags()
	f.StringVar(&ns, "namespace", "default", "the namespace the topologies run in (egret.kubernetes.namespace)")
	f.StringVar(&podSA, "pod-service-account", "egret", "the service account the pods run as (egret.kubernetes.service.account)")
	f.StringVar(&subject, "subject", "", "who runs egret: user:NAME, group:NAME or serviceaccount:NAMESPACE:NAME")
	f.BoolVar(&apply, "apply", false, "create or update the objects instead of printing them")
	f.StringVar(&kubeconfig, "kubeconfig", "", "with --apply: the kubeconfig (default $KUBECONFIG, else ~/.kube/config)")
	f.StringVar(&context, "context", "", "with --apply: the kubeconfig context (default its current one)")
	cmd.AddCommand(rbac)
	return cmd
}
