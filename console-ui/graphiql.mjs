// The console's GraphiQL (README "Admin console"): the playground's GraphiQL 3 (UMD globals React,
// ReactDOM, GraphiQL) with the explorer plugin (@graphiql/plugin-explorer's UMD build, global
// GraphiQLPluginExplorer) and the deployment's default query from the page's JSON config.
import { createClient } from '/playground/assets/graphql-ws/client.js'

const config = JSON.parse(document.getElementById('tributary-playground-config').textContent)
const httpUrl = new URL(config.endpoint, location.href)
const wsUrl = new URL(config.subscriptionEndpoint || config.endpoint, location.href)
wsUrl.protocol = wsUrl.protocol === 'https:' ? 'wss:' : 'ws:'

const wsClient = createClient({ url: wsUrl.href, lazy: true, retryAttempts: 3 })
const fetcher = GraphiQL.createFetcher({ url: httpUrl.href, wsClient, enableIncrementalDelivery: false })
const explorer = GraphiQLPluginExplorer.explorerPlugin({ showAttribution: false })

function App() {
  const [query, setQuery] = React.useState(config.defaultQuery)
  return React.createElement(GraphiQL, {
    fetcher,
    query,
    onEditQuery: setQuery,
    defaultQuery: config.defaultQuery,
    plugins: [explorer],
    visiblePlugin: explorer,
    defaultEditorToolsVisibility: true,
    shouldPersistHeaders: false,
  })
}

ReactDOM.createRoot(document.getElementById('graphiql')).render(React.createElement(App))
