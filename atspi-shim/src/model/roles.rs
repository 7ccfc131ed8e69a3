//! AccessKit role → AT-SPI role.
//!
//! A `role_description` does not turn the role into EXTENDED (Orca ignores
//! EXTENDED objects); it is exposed as the `roledescription` attribute.
//!
//! Chosen for what Orca 43.1 says (its `formatting.py` and
//! `speech_generator.py`), see docs/compat.md #22, #24 and #25:
//! - every `Window` is a FRAME, the surface's root and the windows inside it
//!   (egui's "Settings", "Widget Gallery"). Orca names a FRAME ancestor when
//!   focus enters it (its `ancestor` format falls back to the frame's
//!   `focused` one, `labelOrName`); WINDOW and INTERNAL_FRAME have no speech
//!   format, so focus entering them says nothing of the window, and DIALOG
//!   adds every unrelated label inside it. accesskit_unix says FRAME too.
//! - a `ColorWell` (a colour button) is a PUSH_BUTTON, as GTK's colour button
//!   and accesskit_unix: Orca treats COLOR_CHOOSER as a chooser dialog and
//!   speaks only its labelled-by label, never its name ("Color").
//! - `ColumnHeader` / `RowHeader` are COLUMN_HEADER / ROW_HEADER, as
//!   accesskit_unix, Gecko and Chromium, not GTK's TABLE_COLUMN_HEADER /
//!   TABLE_ROW_HEADER: Orca 43.1's web script counts only TABLE_CELL,
//!   COLUMN_HEADER and ROW_HEADER as table cells (structural_navigation.py
//!   `getCellForObj`), so from a TABLE_COLUMN_HEADER Alt+Shift+arrows said
//!   "Not in a table.".

use accesskit::Role;
use accesskit_consumer::NodeRef;
use atspi_common::Role as AtspiRole;

/// The AT-SPI role of an exposed node.
pub(crate) fn atspi_role(node: &NodeRef) -> AtspiRole {
    match node.role() {
        Role::Button if node.toggled().is_some() => AtspiRole::ToggleButton,
        role => base_role(role),
    }
}

/// The role mapping that depends on the AccessKit role alone.
pub(crate) fn base_role(role: Role) -> AtspiRole {
    use AtspiRole as A;
    match role {
        Role::Unknown => A::Unknown,
        Role::TextRun => A::Static,
        Role::Cell | Role::GridCell | Role::LayoutTableCell => A::TableCell,
        Role::Label => A::Label,
        Role::Image | Role::GraphicsSymbol => A::Image,
        Role::Link
        | Role::DocBackLink
        | Role::DocBiblioRef
        | Role::DocGlossRef
        | Role::DocNoteRef => A::Link,
        Role::Row | Role::LayoutTableRow => A::TableRow,
        Role::ListItem
        | Role::ListMarker
        | Role::ListBoxOption
        | Role::MenuListOption
        | Role::DocBiblioEntry => A::ListItem,
        Role::TreeItem => A::TreeItem,
        Role::MenuItem => A::MenuItem,
        Role::MenuItemCheckBox => A::CheckMenuItem,
        Role::MenuItemRadio => A::RadioMenuItem,
        Role::Paragraph => A::Paragraph,
        Role::GenericContainer | Role::Pane | Role::ScrollView => A::Panel,
        Role::CheckBox => A::CheckBox,
        Role::RadioButton => A::RadioButton,
        Role::TextInput
        | Role::SearchInput
        | Role::EmailInput
        | Role::NumberInput
        | Role::PhoneNumberInput
        | Role::UrlInput => A::Entry,
        Role::DateInput
        | Role::DateTimeInput
        | Role::WeekInput
        | Role::MonthInput
        | Role::TimeInput => A::DateEditor,
        Role::MultilineTextInput => A::Text,
        Role::PasswordInput => A::PasswordText,
        Role::Button | Role::DefaultButton => A::Button,
        Role::Switch => A::ToggleButton,
        Role::RowHeader => A::RowHeader,
        Role::ColumnHeader => A::ColumnHeader,
        Role::RowGroup
        | Role::Group
        | Role::RadioGroup
        | Role::Details
        | Role::Figure
        | Role::Ruby => A::Grouping,
        Role::List | Role::DocPageList | Role::Feed => A::List,
        Role::Table | Role::LayoutTable | Role::Grid => A::Table,
        Role::TreeGrid => A::TreeTable,
        Role::ListGrid | Role::ListBox => A::ListBox,
        Role::Menu => A::Menu,
        Role::MenuListPopup => A::Menu,
        Role::MenuBar => A::MenuBar,
        Role::Abbr
        | Role::Code
        | Role::Emphasis
        | Role::Strong
        | Role::Time
        | Role::RubyAnnotation => A::Static,
        Role::Alert => A::Notification,
        Role::AlertDialog => A::Alert,
        Role::Application => A::Embedded,
        Role::Article => A::Article,
        Role::Audio => A::Audio,
        Role::Video => A::Video,
        Role::Banner
        | Role::Header
        | Role::Complementary
        | Role::ContentInfo
        | Role::Footer
        | Role::Main
        | Role::Navigation
        | Role::Region
        | Role::Search => A::Landmark,
        Role::Blockquote => A::BlockQuote,
        Role::Canvas => A::Canvas,
        Role::Caption | Role::FigureCaption => A::Caption,
        Role::Caret => A::Unknown,
        Role::ColorWell => A::Button,
        Role::ComboBox | Role::EditableComboBox => A::ComboBox,
        Role::Comment => A::Comment,
        Role::ContentDeletion => A::ContentDeletion,
        Role::ContentInsertion => A::ContentInsertion,
        Role::Definition => A::DescriptionValue,
        Role::Term => A::DescriptionTerm,
        Role::DescriptionList => A::DescriptionList,
        Role::Dialog => A::Dialog,
        Role::DisclosureTriangle => A::ToggleButton,
        Role::Document | Role::GraphicsDocument | Role::PdfRoot => A::DocumentFrame,
        Role::RootWebArea => A::DocumentWeb,
        Role::Terminal => A::Terminal,
        Role::EmbeddedObject
        | Role::PluginObject
        | Role::Iframe
        | Role::IframePresentational
        | Role::WebView => A::InternalFrame,
        Role::Form => A::Form,
        Role::Heading => A::Heading,
        Role::ImeCandidate | Role::Keyboard => A::RedundantObject,
        Role::Legend => A::Label,
        Role::LineBreak => A::Static,
        Role::Log => A::Log,
        Role::Mark => A::Mark,
        Role::Marquee => A::Marquee,
        Role::Math => A::Math,
        Role::Meter => A::LevelBar,
        Role::Note | Role::DocFootnote | Role::DocEndnote => A::Footnote,
        Role::ProgressIndicator => A::ProgressBar,
        Role::ScrollBar => A::ScrollBar,
        Role::Section
        | Role::SectionHeader
        | Role::SectionFooter
        | Role::Suggestion
        | Role::GraphicsObject
        | Role::PdfActionableHighlight
        | Role::DocAbstract
        | Role::DocAcknowledgements
        | Role::DocAfterword
        | Role::DocAppendix
        | Role::DocBibliography
        | Role::DocChapter
        | Role::DocColophon
        | Role::DocConclusion
        | Role::DocCover
        | Role::DocCredit
        | Role::DocCredits
        | Role::DocDedication
        | Role::DocEndnotes
        | Role::DocEpigraph
        | Role::DocEpilogue
        | Role::DocErrata
        | Role::DocExample
        | Role::DocForeword
        | Role::DocGlossary
        | Role::DocIndex
        | Role::DocIntroduction
        | Role::DocNotice
        | Role::DocPart
        | Role::DocPreface
        | Role::DocPrologue
        | Role::DocPullquote
        | Role::DocQna
        | Role::DocSubtitle
        | Role::DocTip
        | Role::DocToc => A::Section,
        Role::DocPageBreak => A::Separator,
        Role::DocPageFooter => A::Footer,
        Role::DocPageHeader => A::Header,
        Role::Slider => A::Slider,
        Role::SpinButton => A::SpinButton,
        Role::Splitter => A::Separator,
        Role::Status => A::StatusBar,
        Role::SvgRoot => A::Image,
        Role::Tab => A::PageTab,
        Role::TabList => A::PageTabList,
        Role::TabPanel => A::ScrollPane,
        Role::Timer => A::Timer,
        Role::TitleBar => A::TitleBar,
        Role::Toolbar => A::ToolBar,
        Role::Tooltip => A::ToolTip,
        Role::Tree => A::Tree,
        Role::Window => A::Frame,
    }
}

/// `GetRoleName` / `GetLocalizedRoleName`: the English role name ATK and
/// libatspi use ("push button", "check box", …). atspi-common's table says
/// "button" for PUSH_BUTTON; every other entry matches.
pub(crate) fn role_name(role: AtspiRole) -> &'static str {
    match role {
        AtspiRole::Button => "push button",
        other => other.name(),
    }
}

/// Roles AccessKit treats as links.
pub(crate) fn is_link(node: &NodeRef) -> bool {
    matches!(
        node.role(),
        Role::Link | Role::DocBackLink | Role::DocBiblioRef | Role::DocGlossRef | Role::DocNoteRef
    )
}

/// Document roots (Document).
pub(crate) fn is_document(node: &NodeRef) -> bool {
    matches!(
        node.role(),
        Role::Document | Role::RootWebArea | Role::PdfRoot
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_roles_have_the_expected_numbers() {
        assert_eq!(base_role(Role::Button) as u32, 43);
        assert_eq!(base_role(Role::CheckBox) as u32, 7);
        assert_eq!(base_role(Role::TextInput) as u32, 79);
        assert_eq!(base_role(Role::Label) as u32, 29);
        assert_eq!(base_role(Role::GenericContainer) as u32, 39);
        assert_eq!(AtspiRole::Frame as u32, 23);
        assert_eq!(role_name(base_role(Role::Button)), "push button");
        assert_eq!(role_name(base_role(Role::Heading)), "heading");
    }

    /// Orca 43.1 names a FRAME ancestor when focus enters it, not a WINDOW
    /// (issue 15: "Settings" went unsaid for an egui window).
    #[test]
    fn every_window_is_a_frame() {
        assert_eq!(base_role(Role::Window), AtspiRole::Frame);
    }

    /// Orca 43.1's table navigation counts a header as a cell only with
    /// COLUMN_HEADER / ROW_HEADER (issue 17).
    #[test]
    fn headers_are_column_and_row_headers() {
        assert_eq!(base_role(Role::ColumnHeader), AtspiRole::ColumnHeader);
        assert_eq!(base_role(Role::RowHeader), AtspiRole::RowHeader);
        assert_eq!(role_name(base_role(Role::ColumnHeader)), "column header");
        assert_eq!(role_name(base_role(Role::RowHeader)), "row header");
    }

    /// Orca 43.1 says a COLOR_CHOOSER's label only, never its name.
    #[test]
    fn a_colour_well_is_a_push_button() {
        assert_eq!(role_name(base_role(Role::ColorWell)), "push button");
    }
}
