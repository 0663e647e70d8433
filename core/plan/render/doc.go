// Package render prints a packing plan for egret submit --dry-run: as an
// aligned table for people or as JSON for tools.
//
// The JSON document (see Plan) has these lowerCamel fields:
//
//	topologyId                      string
//	containers[].id                 container id (1..N)
//	containers[].required           resources the container needs, padding included
//	containers[].instances[]        sorted by taskId
//	  .component, .taskId, .index   component name, global task id, index in the component
//	  .resources                    resources of the instance
//	total                           sum of the containers' required resources
//	resources: cpu (cores, number), ramBytes, diskBytes (integers)
//
// Containers appear in id order; field names never change meaning.
package render
